"""steadyocr's exceptions. Each carries .code (the finding's code, such as L1_NO_DRIVER or LOAD_FAILED, else the
status code's name, such as DATA_LOSS), .fix (what to do; "" when nothing specific is known) and .input (for
ImageError: the path, "bytes", or "#N" for the N-th input of a batch)."""


class Error(Exception):
    """Base class of steadyocr's errors."""

    def __init__(self, message, code="", fix="", input=""):
        super().__init__(message)
        self.message = message
        self.code = code
        self.fix = fix
        self.input = input

    def __str__(self):
        return self.message + (f" (fix: {self.fix})" if self.fix else "")


class BackendUnavailable(Error):
    """No backend can serve: require_gpu=True without a usable GPU, or a pinned backend that fails to qualify.
    .code is the doctor's finding (L1_NO_DRIVER, ...)."""


class ModelError(Error):
    """Model files missing (code INVALID_ARGUMENT) or unreadable (code LOAD_FAILED)."""


class ImageError(Error):
    """One input cannot be read (missing file, damaged or unsupported data, over a limit); .input names it."""
