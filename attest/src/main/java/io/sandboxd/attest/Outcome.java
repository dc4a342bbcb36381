package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/** How a unit's execution ended (WIRE.md Q6), in serde's external tagging. */
public sealed interface Outcome {
  JsonNode toJson();

  /** Short human form, e.g. {@code Terminated(CpuTime)}. */
  String summary();

  /** Which bound a terminated unit exceeded. */
  enum Breach {
    EnergyBudget,
    CpuTime,
    Memory
  }

  /** The entry returned normally. */
  record Completed() implements Outcome {
    @Override
    public JsonNode toJson() {
      return JsonNodeFactory.instance.textNode("Completed");
    }

    @Override
    public String summary() {
      return "Completed";
    }
  }

  /** A hard budget was exceeded and the unit was stopped. */
  record Terminated(Breach breach) implements Outcome {
    @Override
    public JsonNode toJson() {
      return tagged("Terminated", "breach", breach.name());
    }

    @Override
    public String summary() {
      return "Terminated(" + breach + ")";
    }
  }

  /** The run was refused before anything executed. */
  record Declined(String reason) implements Outcome {
    @Override
    public JsonNode toJson() {
      return tagged("Declined", "reason", reason);
    }

    @Override
    public String summary() {
      return "Declined: " + reason;
    }
  }

  /** The unit failed: a trap, a non-zero exit, or a host error. */
  record Failed(String reason) implements Outcome {
    @Override
    public JsonNode toJson() {
      return tagged("Failed", "reason", reason);
    }

    @Override
    public String summary() {
      return "Failed: " + reason;
    }
  }

  /** Serde's external tagging of a one-field variant: {@code {"Tag":{"field":"value"}}}. */
  private static JsonNode tagged(String tag, String field, String value) {
    ObjectNode o = JsonNodeFactory.instance.objectNode();
    o.putObject(tag).put(field, value);
    return o;
  }

  static Outcome fromJson(JsonNode n, String path) {
    if (n != null && n.isTextual() && n.textValue().equals("Completed")) {
      return new Completed();
    }
    if (n == null || !n.isObject() || n.size() != 1) {
      throw new AttestException(path + ": expected \"Completed\" or a one-key tagged object");
    }
    String tag = n.fieldNames().next();
    JsonReader body = JsonReader.of(n.get(tag), path + "." + tag, JsonReader.RECORD);
    return switch (tag) {
      case "Terminated" ->
          new Terminated(
              JsonReader.constant(
                  Breach.class,
                  body.only(Set.of("breach")).string("breach"),
                  path + ".Terminated.breach",
                  "breach"));
      case "Declined" -> new Declined(body.only(Set.of("reason")).string("reason"));
      case "Failed" -> new Failed(body.only(Set.of("reason")).string("reason"));
      default -> throw new AttestException(path + ": unknown outcome \"" + tag + "\"");
    };
  }
}
