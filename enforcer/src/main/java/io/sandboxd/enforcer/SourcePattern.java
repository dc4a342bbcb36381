package io.sandboxd.enforcer;

import io.sandboxd.attest.Hex;

/**
 * A flow-grant pattern marking a source untrusted (Q15): {@code storage:<glob>}, {@code kv:<hex
 * prefix>}, {@code exec:<program>} or {@code net:<host:port>}. Its normalized text is the origin
 * label a matching read adds to the run's taint.
 */
public sealed interface SourcePattern extends FlowPattern<SourcePattern>
    permits SourcePattern.Storage, SourcePattern.Kv, SourcePattern.Exec, SourcePattern.Net {

  /** True when a read from {@code source} is covered by this pattern. */
  boolean matches(FlowSource source);

  /** Parses and normalizes; throws {@link IllegalArgumentException} saying why it is malformed. */
  static SourcePattern parse(String text) {
    int colon = text.indexOf(':');
    // no colon: no kind, so the default branch refuses it
    String body = text.substring(colon + 1);
    return switch (colon < 0 ? "" : text.substring(0, colon)) {
      case "storage" -> new Storage(Glob.parse(body));
      case "kv" -> {
        if (body.length() % 2 != 0 || !Hex.isHex(body, body.length() / 2)) {
          throw new IllegalArgumentException(
              "source pattern \"" + text + "\": kv: takes a lowercase hex key prefix");
        }
        yield new Kv(Bytes.of(Hex.decode(body, -1, "kv prefix")));
      }
      case "exec" -> new Exec(new ProgramRef(body));
      case "net" -> new Net(Endpoint.parse(body));
      default ->
          throw new IllegalArgumentException(
              "source pattern \"" + text + "\": expected storage:, kv:, exec: or net:");
    };
  }

  /** Storage reads of paths the glob matches. */
  record Storage(Glob glob) implements SourcePattern {
    @Override
    public String label() {
      return "storage:" + glob.text();
    }

    @Override
    public boolean matches(FlowSource source) {
      return source instanceof FlowSource.StorageRead r && glob.matches(r.path());
    }
  }

  /** Kv gets of keys with this prefix. */
  record Kv(Bytes prefix) implements SourcePattern {
    @Override
    public String label() {
      return "kv:" + prefix.hex();
    }

    @Override
    public boolean matches(FlowSource source) {
      return source instanceof FlowSource.KvRead r && prefix.isPrefixOf(r.key().toArray());
    }
  }

  /** The output of a program, by name or binary hash, anywhere in its exec chain. */
  record Exec(ProgramRef program) implements SourcePattern {
    @Override
    public String label() {
      return "exec:" + program.text();
    }

    @Override
    public boolean matches(FlowSource source) {
      return source instanceof FlowSource.ExecOutput o
          && o.program().steps().stream().anyMatch(program::matches);
    }
  }

  /** Responses from one endpoint. */
  record Net(Endpoint endpoint) implements SourcePattern {
    @Override
    public String label() {
      return "net:" + endpoint;
    }

    @Override
    public boolean matches(FlowSource source) {
      return source instanceof FlowSource.NetResponse r && r.endpoint().equals(endpoint);
    }
  }
}
