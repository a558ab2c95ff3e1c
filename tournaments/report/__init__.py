"""What a tournament shows: the terminal tables and live display, the standings formats, the
HTML report and its replay pages."""
