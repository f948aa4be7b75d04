"""Kafka's security features as the emulator offers them: listeners, authentication, authorization.

Network-layer policy (STYLE.md, "our own house"): the shell asks this package, once per connection,
for the connection's TLS context and SASL authenticator, and every request it admits carries the
principal found here. Nothing in here does I/O; the shell owns the sockets.
"""
