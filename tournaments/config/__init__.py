"""What a tournament is told: its config file, read and checked with the line of every error."""
