package io.sandboxd.attest;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

/**
 * A C2SP signed note: a text ending in a newline, a blank line, then one or more signature lines
 * {@code — <key name> base64(key ID ‖ signature)}. The one codec of that format in sandboxd
 * (checkpoints of the node log and of fleet aggregators use it). Parsing is strict; a note is
 * trusted only through {@link #verify}.
 */
public record SignedNote(String text, List<Signature> signatures) {
  /** Largest note accepted, in bytes: room for far more than the 16 signatures C2SP requires. */
  public static final int MAX_BYTES = 128 * 1024;

  /** Most signature lines accepted (C2SP: verifiers must accept at least 16). */
  public static final int MAX_SIGNATURES = 64;

  private static final String DASH = "\u2014 ";

  public SignedNote {
    signatures = List.copyOf(signatures);
  }

  /** One signature line: the key name, the 32-bit key ID and the signature bytes after it. */
  // The array component is copied in and out.
  @SuppressWarnings("ArrayRecordComponent")
  public record Signature(String keyName, int keyId, byte[] signature) {
    public Signature {
      signature = signature.clone();
    }

    @Override
    public byte[] signature() {
      return signature.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Signature s
          && s.keyName.equals(keyName)
          && s.keyId == keyId
          && Arrays.equals(s.signature, signature);
    }

    @Override
    public int hashCode() {
      return 31 * (31 * keyName.hashCode() + keyId) + Arrays.hashCode(signature);
    }

    @Override
    public String toString() {
      return "Signature[" + keyName + ", " + String.format("%08x", keyId) + "]";
    }

    String line() {
      byte[] b = new byte[4 + signature.length];
      ByteBuffer.wrap(b).putInt(keyId).put(signature);
      return DASH + keyName + " " + Base64.getEncoder().encodeToString(b) + "\n";
    }
  }

  /** Signs {@code text} (which must end in a newline) with {@code key} under {@code keyName}. */
  public static SignedNote sign(String text, String keyName, SigningKey key) {
    requireText(text);
    NoteVerifier v = new NoteVerifier(keyName, key.publicKey());
    byte[] sig = key.sign(text.getBytes(StandardCharsets.UTF_8));
    return new SignedNote(text, List.of(new Signature(keyName, v.keyId(), sig)));
  }

  /** The note's bytes as text: the text, a blank line, the signature lines. */
  public String encode() {
    StringBuilder b = new StringBuilder(text).append('\n');
    for (Signature s : signatures) {
      b.append(s.line());
    }
    return b.toString();
  }

  /**
   * The text, once a signature by a key in {@code known} verifies. Signatures by other keys
   * (another name or another key ID) are ignored; one by a known key that fails refuses the note.
   *
   * @throws NoteException UNKNOWN_KEY when no signature is by a known key, BAD_SIGNATURE when one
   *     by a known key does not verify
   */
  public String verify(List<NoteVerifier> known) {
    byte[] message = text.getBytes(StandardCharsets.UTF_8);
    boolean verified = false;
    for (Signature s : signatures) {
      for (NoteVerifier v : known) {
        if (v.name().equals(s.keyName()) && v.keyId() == s.keyId()) {
          if (!v.key().verify(message, s.signature)) {
            throw new NoteException(
                NoteException.Reason.BAD_SIGNATURE,
                "signature by "
                    + s.keyName()
                    + " (key "
                    + v.key().hex()
                    + ") does not verify over the note text");
          }
          verified = true;
        }
      }
    }
    if (!verified) {
      List<String> names = new ArrayList<>();
      for (Signature s : signatures) {
        names.add(s.keyName() + "/" + String.format("%08x", s.keyId()));
      }
      List<String> wanted = new ArrayList<>();
      for (NoteVerifier v : known) {
        wanted.add(v.name() + "/" + String.format("%08x", v.keyId()));
      }
      throw new NoteException(
          NoteException.Reason.UNKNOWN_KEY,
          "no signature by a known key: signed by " + names + ", expected one of " + wanted);
    }
    return text;
  }

  /** Parses a note from its bytes: valid UTF-8 and the rules of {@link #parse(String)}. */
  public static SignedNote parse(byte[] bytes) {
    if (bytes.length > MAX_BYTES) {
      throw malformed("note has " + bytes.length + " bytes, more than " + MAX_BYTES);
    }
    try {
      String s =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(bytes))
              .toString();
      return parse(s);
    } catch (CharacterCodingException e) {
      throw malformed("note is not valid UTF-8");
    }
  }

  /**
   * Parses a note strictly: no control characters but newline, the text separated from the
   * signature lines by the last blank line, at least one well-formed signature line, nothing after
   * the last one's newline.
   */
  public static SignedNote parse(String note) {
    if (note.length() > MAX_BYTES) {
      throw malformed("note has more than " + MAX_BYTES + " characters");
    }
    int line = 1;
    for (int i = 0; i < note.length(); i++) {
      char c = note.charAt(i);
      if (c == '\n') {
        line++;
      } else if (c < 0x20) {
        throw malformed("line " + line + ": control character U+" + String.format("%04X", (int) c));
      }
    }
    if (!StandardCharsets.UTF_8.newEncoder().canEncode(note)) {
      throw malformed("note is not valid UTF-8 (lone surrogate)");
    }
    if (!note.endsWith("\n")) {
      throw malformed("note does not end with a newline");
    }
    int split = note.lastIndexOf("\n\n");
    if (split < 0) {
      throw malformed("no blank line separates the text from the signatures");
    }
    String text = note.substring(0, split + 1);
    if (split == 0) {
      throw malformed("the note text is empty");
    }
    int textLines = (int) text.chars().filter(ch -> ch == '\n').count();
    String block = note.substring(split + 2);
    if (block.isEmpty()) {
      throw malformed("no signature lines after the blank line");
    }
    String[] lines = block.substring(0, block.length() - 1).split("\n", -1);
    if (lines.length > MAX_SIGNATURES) {
      throw malformed(lines.length + " signature lines, more than " + MAX_SIGNATURES);
    }
    List<Signature> sigs = new ArrayList<>(lines.length);
    for (int i = 0; i < lines.length; i++) {
      sigs.add(signatureLine(lines[i], textLines + 2 + i));
    }
    return new SignedNote(text, sigs);
  }

  private static Signature signatureLine(String l, int lineNo) {
    String where = "line " + lineNo + " (signature)";
    if (!l.startsWith(DASH)) {
      throw malformed(where + ": does not start with an em dash and a space");
    }
    String rest = l.substring(DASH.length());
    int space = rest.indexOf(' ');
    if (space < 0) {
      throw malformed(where + ": no space between key name and signature");
    }
    String name = rest.substring(0, space);
    try {
      requireKeyName(name);
    } catch (NoteException e) {
      throw malformed(where + ": " + e.getMessage());
    }
    byte[] b = base64(rest.substring(space + 1), where);
    if (b.length < 5) {
      throw malformed(where + ": signature has " + b.length + " bytes, needs a key ID and more");
    }
    ByteBuffer buf = ByteBuffer.wrap(b);
    int id = buf.getInt();
    byte[] sig = new byte[b.length - 4];
    buf.get(sig);
    return new Signature(name, id, sig);
  }

  /** Refuses a key name that is empty or holds a Unicode space or a plus. */
  static void requireKeyName(String name) {
    if (name == null || name.isEmpty()) {
      throw malformed("key name is empty");
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c == '+' || Character.isWhitespace(c) || Character.isSpaceChar(c) || c < 0x20) {
        throw malformed(
            "key name '" + name + "': character " + i + " is a space, plus or control character");
      }
    }
  }

  /** Standard base64 with padding, in its one canonical spelling. */
  static byte[] base64(String s, String where) {
    byte[] b;
    try {
      b = Base64.getDecoder().decode(s);
    } catch (IllegalArgumentException e) {
      throw malformed(where + ": not standard base64: " + e.getMessage());
    }
    if (!Base64.getEncoder().encodeToString(b).equals(s)) {
      throw malformed(where + ": base64 is not in canonical padded form");
    }
    return b;
  }

  private static void requireText(String text) {
    if (text == null || text.isEmpty() || !text.endsWith("\n")) {
      throw malformed("note text must be non-empty and end with a newline");
    }
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 && c != '\n') {
        throw malformed("note text: control character at " + i);
      }
    }
  }

  private static NoteException malformed(String message) {
    return new NoteException(NoteException.Reason.MALFORMED, message);
  }
}
