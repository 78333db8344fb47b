"""The interlock runtime: plans in, effects and records out (never imports the parser)."""
