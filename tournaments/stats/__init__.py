"""What the results say: ratings (joint Elo with intervals), the SPRT, standings and forfeits."""
