"""mixdbg's VS Code templates and JSON Schemas, installed as ``mixdbg.vscode_templates``.

The folder sits at the top of the repository so users can read and copy the templates;
this file makes it a regular package so ``importlib.resources`` finds the files in every
kind of install (wheel, sdist, editable) and on every supported Python.
"""
