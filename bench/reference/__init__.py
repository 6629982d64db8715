"""The bench's time reference: realtime/PHC stamps, linuxptp health, the run monitor."""
