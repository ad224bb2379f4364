from . import lr_scheduler  # noqa: F401  (merged with rustgrad.optim by the lead)
