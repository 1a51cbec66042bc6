"""The desk's home: what needs a person now, and the notifications that tell them."""
