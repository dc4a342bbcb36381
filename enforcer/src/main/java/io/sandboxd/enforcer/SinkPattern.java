package io.sandboxd.enforcer;

/** A flow-grant sink pattern (Q15): {@code egress:<host:port>} or {@code exec:<program>}. */
public sealed interface SinkPattern extends FlowPattern<SinkPattern>
    permits SinkPattern.Egress, SinkPattern.Exec {

  /** True when {@code sink} is this pattern's sink. */
  boolean matches(FlowSink sink);

  /** Parses and normalizes; throws {@link IllegalArgumentException} saying why it is malformed. */
  static SinkPattern parse(String text) {
    if (text.startsWith("egress:")) {
      return new Egress(Endpoint.parse(text.substring("egress:".length())));
    }
    if (text.startsWith("exec:")) {
      return new Exec(new ProgramRef(text.substring("exec:".length())));
    }
    throw new IllegalArgumentException("sink pattern \"" + text + "\": expected egress: or exec:");
  }

  /** Egress to exactly this endpoint. */
  record Egress(Endpoint endpoint) implements SinkPattern {
    @Override
    public String label() {
      return "egress:" + endpoint;
    }

    @Override
    public boolean matches(FlowSink sink) {
      return sink instanceof FlowSink.Egress e && e.endpoint().equals(endpoint);
    }
  }

  /** Exec of this program (by name or hash) as the final target of the chain. */
  record Exec(ProgramRef program) implements SinkPattern {
    @Override
    public String label() {
      return "exec:" + program.text();
    }

    @Override
    public boolean matches(FlowSink sink) {
      return sink instanceof FlowSink.Exec e && program.matches(e.program().target());
    }
  }
}
