"""The `.wf` grammar, shipped as package data (`wf.lark`)."""
