print("ytkkv")
