"""The simulated rack: clock models with ground truth, and one emulator per protocol on loopback.

Never imports `drivers/`: an emulator must not share the client's code.
"""
