package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.function.Consumer;
import java.util.function.Function;

/** How a strict reader refuses a changed copy of a record's JSON (the test fails if it reads). */
final class Refusal {
  private Refusal() {}

  /** The message {@code reader} refuses {@code json}, changed by {@code change}, with. */
  static <T> String of(Function<JsonNode, T> reader, ObjectNode json, Consumer<ObjectNode> change) {
    ObjectNode c = json.deepCopy();
    change.accept(c);
    return assertThrows(AttestException.class, () -> reader.apply(c)).getMessage();
  }
}
