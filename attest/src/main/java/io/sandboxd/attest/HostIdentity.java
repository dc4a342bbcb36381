package io.sandboxd.attest;

/** Who signed a record and where: the node's id, its Ed25519 key and its platform string. */
public record HostIdentity(String id, String publicKey, String platform) {}
