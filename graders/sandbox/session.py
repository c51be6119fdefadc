"""The old name of graders/sandbox/protocol.py, kept so that existing imports keep working.

"Session" means several things in this codebase (a database session, the cookie session, a
quiz session); the module that defines the protocol checks drive a submission through is
now named for what it is. Import from graders.sandbox.protocol.
"""

from graders.sandbox.protocol import (
    Handle,
    Keep,
    LimitExceeded,
    LoadError,
    Pending,
    Session,
    SubmissionError,
    measured_reply,
    storages_reply,
)

__all__ = [
    "Handle",
    "Keep",
    "LimitExceeded",
    "LoadError",
    "Pending",
    "Session",
    "SubmissionError",
    "measured_reply",
    "storages_reply",
]
