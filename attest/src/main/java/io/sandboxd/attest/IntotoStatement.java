package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * An in-toto Statement v1: the artifacts it is about (by digest) and a typed predicate. Its
 * serialized form is the canonical JSON of {@link #toJson()}, so one statement has one byte form.
 */
public record IntotoStatement(List<Subject> subjects, String predicateType, JsonNode predicate) {
  public static final String TYPE = "https://in-toto.io/Statement/v1";

  /** The DSSE payload type of an in-toto statement. */
  public static final String PAYLOAD_TYPE = "application/vnd.in-toto+json";

  private static final Set<String> FIELDS =
      Set.of("_type", "subject", "predicateType", "predicate");

  /**
   * One artifact: a name unique within the statement and its digests, algorithm to lowercase hex
   * ({@code sha256}, and {@code blake3}: BLAKE3-256, the project's content address).
   */
  public record Subject(String name, Map<String, String> digest) {
    public Subject {
      if (digest.isEmpty()) {
        throw new AttestException("subject " + name + ": digest: at least one is required");
      }
      digest = Map.copyOf(new TreeMap<>(digest));
    }
  }

  public IntotoStatement {
    subjects = List.copyOf(subjects);
    if (subjects.isEmpty()) {
      throw new AttestException("subject: at least one is required");
    }
    if (subjects.stream().map(Subject::name).distinct().count() != subjects.size()) {
      throw new AttestException("subject: names must be unique");
    }
    predicate = predicate.deepCopy();
  }

  public ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("_type", TYPE);
    var arr = o.putArray("subject");
    for (Subject s : subjects) {
      ObjectNode so = arr.addObject();
      so.put("name", s.name());
      ObjectNode d = so.putObject("digest");
      new TreeMap<>(s.digest()).forEach(d::put);
    }
    o.put("predicateType", predicateType);
    o.set("predicate", predicate.deepCopy());
    return o;
  }

  /** The bytes a DSSE envelope carries: canonical JSON (integers only, as every signed record). */
  public byte[] payload() {
    ObjectNode json = toJson();
    return CanonicalJson.recordString(json).getBytes(StandardCharsets.UTF_8);
  }

  /** Reads a statement strictly: the four fields, a v1 type, a non-empty subject list. */
  public static IntotoStatement fromJson(JsonNode json) {
    JsonReader r = JsonReader.of(json, "statement", JsonReader.RECORD).only(FIELDS);
    if (!TYPE.equals(r.string("_type"))) {
      throw new AttestException("statement._type: expected " + TYPE + ", got " + r.string("_type"));
    }
    List<Subject> subjects =
        r.list(
            "subject",
            (n, p) -> {
              JsonReader s = JsonReader.of(n, p, Set.of("name", "digest"), JsonReader.RECORD);
              JsonReader d = s.object("digest");
              Map<String, String> digest = new TreeMap<>();
              d.node()
                  .fieldNames()
                  .forEachRemaining(
                      alg -> {
                        String v = d.string(alg);
                        if (!v.matches("[0-9a-f]+")) {
                          throw new AttestException(d.pathOf(alg) + ": expected lowercase hex");
                        }
                        digest.put(alg, v);
                      });
              return new Subject(s.string("name"), digest);
            });
    JsonNode predicate = r.required("predicate");
    if (!predicate.isObject()) {
      throw new AttestException("statement.predicate: expected a JSON object");
    }
    return new IntotoStatement(subjects, r.string("predicateType"), predicate);
  }
}
