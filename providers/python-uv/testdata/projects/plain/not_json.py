"""Prints something that is not JSON."""
print("this is not json")
