package io.sandboxd.attest;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Optional;

/**
 * A signed tree head of an append-only log in the C2SP tlog-checkpoint format: the note text is the
 * origin (the log's name, e.g. {@code sandboxd/<host id>}), the tree size in decimal and the base64
 * root hash (WIRE.md §2.10's BLAKE3 tree), each on its own line, signed as a C2SP signed note by
 * the log's Ed25519 key under the origin as key name.
 */
// The array component is copied in and out, and equals/hashCode/toString go by content.
@SuppressWarnings("ArrayRecordComponent")
public record LogCheckpoint(String origin, long treeSize, byte[] root, List<String> extensions) {
  public LogCheckpoint {
    SignedNote.requireKeyName(origin);
    if (treeSize < 0) {
      throw new NoteException(NoteException.Reason.MALFORMED, "tree size " + treeSize + " < 0");
    }
    if (root == null || root.length != 32) {
      throw new NoteException(NoteException.Reason.MALFORMED, "root hash must be 32 bytes");
    }
    root = root.clone();
    extensions = List.copyOf(extensions);
    for (String e : extensions) {
      if (e.isEmpty() || e.indexOf('\n') >= 0) {
        throw new NoteException(
            NoteException.Reason.MALFORMED, "extension lines must be non-empty single lines");
      }
    }
  }

  /** A checkpoint with no extension lines (the only kind sandboxd signs). */
  public LogCheckpoint(String origin, long treeSize, byte[] root) {
    this(origin, treeSize, root, List.of());
  }

  /** The checkpoint of {@code head} for the log named {@code origin}. */
  public static LogCheckpoint of(String origin, TreeHead head) {
    return new LogCheckpoint(origin, head.size(), head.root());
  }

  @Override
  public byte[] root() {
    return root.clone();
  }

  /** The tree size and root, to check proofs against with {@link MerkleVerifier}. */
  public TreeHead head() {
    return new TreeHead(treeSize, root);
  }

  /** The note text: origin, size, base64 root (and any extension lines), each ending in \n. */
  public String body() {
    StringBuilder b =
        new StringBuilder(origin)
            .append('\n')
            .append(treeSize)
            .append('\n')
            .append(Base64.getEncoder().encodeToString(root))
            .append('\n');
    for (String e : extensions) {
      b.append(e).append('\n');
    }
    return b.toString();
  }

  /** The signed note text of this checkpoint, signed by {@code key} under the origin. */
  public String sign(SigningKey key) {
    return SignedNote.sign(body(), origin, key).encode();
  }

  /** The verifier of checkpoints this log's {@code key} signs. */
  public static NoteVerifier verifier(String origin, PublicKey key) {
    return new NoteVerifier(origin, key);
  }

  /**
   * Parses and verifies a signed checkpoint note from the log named {@code origin} with {@code
   * key}: the note must carry a valid signature by (origin, key) and its origin line must be {@code
   * origin}.
   *
   * @throws NoteException MALFORMED, UNKNOWN_KEY, BAD_SIGNATURE or WRONG_ORIGIN
   */
  public static LogCheckpoint verify(String note, NoteVerifier verifier) {
    SignedNote n = SignedNote.parse(note);
    // The body is read before the signature is checked, so a malformed note says where it is.
    LogCheckpoint cp = parseBody(n.text());
    n.verify(List.of(verifier));
    if (!cp.origin.equals(verifier.name())) {
      throw new NoteException(
          NoteException.Reason.WRONG_ORIGIN,
          "checkpoint origin '"
              + cp.origin
              + "' is not the expected log '"
              + verifier.name()
              + "'");
    }
    return cp;
  }

  /**
   * Verifies a checkpoint note given only the log's public key, taking the log's name from the
   * note's own origin line (the key ID still binds name and key: a note signed under another name,
   * or by another key, is refused). With {@code expectedOrigin} the origin must be that.
   */
  public static LogCheckpoint verify(String note, PublicKey key, Optional<String> expectedOrigin) {
    SignedNote n = SignedNote.parse(note);
    LogCheckpoint cp = parseBody(n.text());
    String origin = expectedOrigin.orElse(cp.origin);
    n.verify(List.of(new NoteVerifier(origin, key)));
    if (!cp.origin.equals(origin)) {
      throw new NoteException(
          NoteException.Reason.WRONG_ORIGIN,
          "checkpoint origin '" + cp.origin + "' is not the expected log '" + origin + "'");
    }
    return cp;
  }

  /**
   * Reads a checkpoint body strictly: at least three non-empty lines; the size in decimal without
   * leading zeros; the root as canonical padded base64 of 32 bytes. Not a verification.
   */
  public static LogCheckpoint parseBody(String text) {
    if (!text.endsWith("\n")) {
      throw malformed("checkpoint text does not end with a newline");
    }
    String[] lines = text.substring(0, text.length() - 1).split("\n", -1);
    if (lines.length < 3) {
      throw malformed("checkpoint text has " + lines.length + " line(s), needs 3");
    }
    for (int i = 0; i < lines.length; i++) {
      if (lines[i].isEmpty()) {
        throw malformed("checkpoint line " + (i + 1) + " is empty");
      }
    }
    String origin = lines[0];
    String size = lines[1];
    if (!size.matches("0|[1-9][0-9]{0,18}")) {
      throw malformed(
          "checkpoint line 2 (tree size) '" + size + "' is not a decimal without leading zeros");
    }
    long n;
    try {
      n = Long.parseLong(size);
    } catch (NumberFormatException e) {
      throw malformed("checkpoint line 2 (tree size) '" + size + "' is out of range");
    }
    byte[] root = SignedNote.base64(lines[2], "checkpoint line 3 (root hash)");
    if (root.length != 32) {
      throw malformed("checkpoint line 3 (root hash) has " + root.length + " bytes, expected 32");
    }
    List<String> ext = new ArrayList<>(Arrays.asList(lines).subList(3, lines.length));
    try {
      return new LogCheckpoint(origin, n, root, ext);
    } catch (NoteException e) {
      throw malformed("checkpoint line 1 (origin): " + e.getMessage());
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LogCheckpoint c
        && c.origin.equals(origin)
        && c.treeSize == treeSize
        && Arrays.equals(c.root, root)
        && c.extensions.equals(extensions);
  }

  @Override
  public int hashCode() {
    return ((31 * origin.hashCode() + Long.hashCode(treeSize)) * 31 + Arrays.hashCode(root)) * 31
        + extensions.hashCode();
  }

  @Override
  public String toString() {
    return "LogCheckpoint[" + origin + ", size=" + treeSize + ", root=" + Hex.encode(root) + "]";
  }

  private static NoteException malformed(String message) {
    return new NoteException(NoteException.Reason.MALFORMED, message);
  }
}
