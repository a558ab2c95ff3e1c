"""Who plays whom, and with which seed: the pairings of each format, and the seeds derived
from the master seed."""
