"""What runs inside asv's benchmark process: the subject as asv sees it, the clock, memory, load, diagnostics."""
