"""Running untrusted submissions: the session protocol the checks drive, and its backends."""
