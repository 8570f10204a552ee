print("secure")
