;;; check.el --- check the documented eglot configuration by hand (docs/editors.md)
;;
;; emacs --batch -l editors/emacs/check.el FILE.wf
;;
;; Loads the configuration of docs/editors.md, opens FILE.wf (in a git work tree, so eglot finds a
;; project), starts `interlock lsp' through eglot and prints the diagnostics it publishes, with
;; their line and (0-based) column.  Needs `interlock' on PATH with the `lsp' extra installed.

(require 'package)
(package-initialize)
(require 'eglot)

;; ---- the configuration of docs/editors.md ----
(define-derived-mode interlock-mode prog-mode "interlock"
  (setq-local comment-start "# "))
(add-to-list 'auto-mode-alist '("\\.wf\\'" . interlock-mode))
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs '(interlock-mode "interlock" "lsp")))
;; ----

(find-file (car command-line-args-left))
;; `eglot-ensure' waits for a command loop that batch mode does not run: connect directly.
(apply #'eglot (eglot--guess-contact))
(let ((deadline (+ (float-time) 30)) (found nil))
  (while (and (not found) (< (float-time) deadline))
    (accept-process-output nil 0.2)
    (setq found (flymake-diagnostics)))
  (message "server: %S" (eglot--server-info (eglot-current-server)))
  (dolist (d found)
    (message "%s:%d:%d: %s" (buffer-file-name)
             (line-number-at-pos (flymake-diagnostic-beg d))
             (save-excursion (goto-char (flymake-diagnostic-beg d)) (current-column))
             (flymake-diagnostic-text d)))
  (kill-emacs (if found 0 1)))
