"""The pure measurement math: numpy and allantools only, no I/O, no other bench layer."""
