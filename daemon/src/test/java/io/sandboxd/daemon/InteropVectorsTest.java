package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ConsistencyProof;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.InclusionProof;
import io.sandboxd.attest.MerkleVerifier;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.TreeHead;
import io.sandboxd.daemon.fleet.FleetDocs;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.KeyFactory;
import java.security.MessageDigest;
import java.security.Signature;
import java.security.spec.EdECPoint;
import java.security.spec.EdECPublicKeySpec;
import java.security.spec.NamedParameterSpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The interop vectors are what {@link InteropVectors} makes, byte for byte, and hold when read back
 * by a consumer with independent code: a naive recursive tree hash, the JDK's own Ed25519 and
 * SHA-256 for the checkpoint note, and every schema id in the main sources appears in a vector.
 */
class InteropVectorsTest {
  static Path root() {
    String root = System.getProperty("sandboxd.root");
    return (root != null && !root.isBlank() ? Paths.get(root) : Paths.get(".."))
        .toAbsolutePath()
        .normalize();
  }

  static Path vectors() {
    return root().resolve("vectors");
  }

  private static JsonNode read(String rel) throws IOException {
    return CanonicalJson.mapper().readTree(Files.readAllBytes(vectors().resolve(rel)));
  }

  @Test
  void theCheckedInFilesAreWhatTheGeneratorMakesByteForByte() throws IOException {
    Map<String, String> generated = InteropVectors.generate();
    boolean write = Boolean.getBoolean("sandboxd.vectors.write");
    if (write) {
      Path cases = vectors().resolve("records/cases");
      if (Files.isDirectory(cases)) {
        try (Stream<Path> s = Files.list(cases)) {
          for (Path p : s.toList()) {
            Files.delete(p);
          }
        }
      }
    }
    for (Map.Entry<String, String> e : generated.entrySet()) {
      Path p = vectors().resolve(e.getKey());
      if (write) {
        Files.createDirectories(p.getParent());
        Files.writeString(p, e.getValue(), StandardCharsets.UTF_8);
      }
      assertTrue(
          Files.isRegularFile(p), p + " is missing: rerun with -Dsandboxd.vectors.write=true");
      assertEquals(
          e.getValue(),
          Files.readString(p, StandardCharsets.UTF_8),
          p + " is stale: rerun this test with -Dsandboxd.vectors.write=true and review the diff");
    }
    try (Stream<Path> s = Files.list(vectors().resolve("records/cases"))) {
      Set<String> present =
          s.map(p -> "records/cases/" + p.getFileName()).collect(Collectors.toSet());
      present.removeAll(generated.keySet());
      assertEquals(Set.of(), present, "case files no generator makes");
    }
  }

  @Test
  void everyRecordIsCanonicalHashesToItsAddressAndIsSignedByItsKey() throws Exception {
    JsonNode file = read("records/records.json");
    for (JsonNode k : file.get("keys")) {
      SigningKey key = SigningKey.fromSeed(Hex.decode(k.get("seed").textValue(), 32, "seed"));
      assertEquals(k.get("public_key").textValue(), key.publicKey().hex());
    }
    for (JsonNode v : file.get("records")) {
      byte[] core = v.get("core").textValue().getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(core, CanonicalJson.canonicalize(core), v.get("name").textValue());
      assertEquals(Blake3.hex(core), v.get("address").textValue());
      assertTrue(
          jdkVerify(
              Hex.decode(v.get("public_key").textValue(), 32, "pk"),
              core,
              Hex.decode(v.get("signature").textValue(), 64, "sig")),
          v.get("name").textValue());
      JsonNode env = CanonicalJson.parse(v.get("envelope").textValue());
      assertEquals(v.get("core").textValue(), CanonicalJson.canonicalString(env.get("core")));
      assertEquals(v.get("schema").textValue(), env.get("core").get("schema").textValue());
    }
    JsonNode content = file.get("content");
    for (String c : List.of("fs_tree", "instance_snapshot", "run_bundle")) {
      byte[] b = content.get(c).get("canonical").textValue().getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(b, CanonicalJson.canonicalize(b), c);
      assertEquals(Blake3.hex(b), content.get(c).get("address").textValue(), c);
    }
    assertEquals(
        Blake3.hex(Base64.getDecoder().decode(content.get("module_base64").textValue())),
        content.get("module_address").textValue());
  }

  @Test
  void theJournalRootIsTheTreeOverTheEntriesLeaves() throws IOException {
    JsonNode content = read("records/records.json").get("content");
    List<byte[]> leaves = new ArrayList<>();
    for (JsonNode e : content.get("journal_entries")) {
      byte[] canonical = e.get("canonical").textValue().getBytes(StandardCharsets.UTF_8);
      assertEquals(Blake3.hex(canonical), e.get("address").textValue());
      byte[] leaf = leaf(Blake3.hash(canonical));
      assertEquals(Hex.encode(leaf), e.get("leaf").textValue());
      leaves.add(leaf);
    }
    assertEquals(Hex.encode(naiveRoot(leaves)), content.get("journal_root").textValue());
    assertEquals(Blake3.hex(new byte[0]), content.get("empty_journal_root").textValue());
  }

  @Test
  void everyBlake3ProofHoldsAndEveryWrongOneFails() throws IOException {
    JsonNode file = read("merkle-blake3/proofs.json");
    List<byte[]> leaves = new ArrayList<>();
    for (JsonNode d : file.get("leaf_data")) {
      leaves.add(leaf(Hex.decode(d.textValue(), 32, "leaf")));
    }
    JsonNode roots = file.get("roots");
    assertEquals(Blake3.hex(new byte[0]), roots.get(0).textValue());
    for (int n = 1; n <= InteropVectors.MAX_SIZE; n++) {
      assertEquals(Hex.encode(naiveRoot(leaves.subList(0, n))), roots.get(n).textValue());
    }
    MerkleVerifier v = MerkleVerifier.blake3();
    int count = 0;
    for (JsonNode p : file.get("inclusion")) {
      InclusionProof proof = InclusionProof.fromJson(p);
      int n = (int) proof.treeSize();
      int i = (int) proof.leafIndex();
      TreeHead head = new TreeHead(n, Hex.decode(roots.get(n).textValue(), 32, "root"));
      assertTrue(v.verifyInclusion(proof, leaves.get(i), head).isValid(), p.toString());
      if (n > 1) {
        InclusionProof wrongIndex = new InclusionProof((i + 1) % n, n, proof.path());
        assertFalse(v.verifyInclusion(wrongIndex, leaves.get(i), head).isValid(), p.toString());
      }
      InclusionProof wrongSize = new InclusionProof(i, n + 1, proof.path());
      assertFalse(v.verifyInclusion(wrongSize, leaves.get(i), head).isValid(), p.toString());
      count++;
    }
    assertEquals(InteropVectors.MAX_SIZE * (InteropVectors.MAX_SIZE + 1) / 2, count);
    count = 0;
    for (JsonNode p : file.get("consistency")) {
      ConsistencyProof proof = ConsistencyProof.fromJson(p);
      int m = (int) proof.oldSize();
      int n = (int) proof.newSize();
      TreeHead older = new TreeHead(m, Hex.decode(roots.get(m).textValue(), 32, "root"));
      TreeHead newer = new TreeHead(n, Hex.decode(roots.get(n).textValue(), 32, "root"));
      assertTrue(v.verifyConsistency(proof, older, newer).isValid(), p.toString());
      if (m < n) {
        TreeHead forged = new TreeHead(m, Hex.decode(roots.get(m + 1).textValue(), 32, "r"));
        assertFalse(v.verifyConsistency(proof, forged, newer).isValid(), p.toString());
      }
      count++;
    }
    assertEquals(InteropVectors.MAX_SIZE * (InteropVectors.MAX_SIZE + 1) / 2, count);
  }

  @Test
  void theCheckpointIsAC2spSignedNoteCheckedWithTheJdksOwnEd25519() throws Exception {
    JsonNode file = read("records/records.json");
    JsonNode log = file.get("node_log");
    byte[] pk = Hex.decode(file.get("keys").get(0).get("public_key").textValue(), 32, "pk");
    String origin = log.get("origin").textValue();
    String note = log.get("checkpoint").textValue();
    int split = note.indexOf("\n\n");
    String text = note.substring(0, split + 1);
    List<byte[]> leaves = new ArrayList<>();
    for (JsonNode l : log.get("leaves")) {
      leaves.add(leaf(Hex.decode(l.get("address").textValue(), 32, "leaf")));
    }
    assertEquals(
        origin
            + "\n"
            + leaves.size()
            + "\n"
            + Base64.getEncoder().encodeToString(naiveRoot(leaves))
            + "\n",
        text);
    String sigLine = note.substring(split + 2);
    String prefix = "\u2014 " + origin + " ";
    assertTrue(sigLine.startsWith(prefix) && sigLine.endsWith("\n"), sigLine);
    byte[] sig = Base64.getDecoder().decode(sigLine.substring(prefix.length()).trim());
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    sha.update(origin.getBytes(StandardCharsets.UTF_8));
    sha.update(new byte[] {0x0A, 0x01});
    sha.update(pk);
    byte[] id = sha.digest();
    for (int i = 0; i < 4; i++) {
      assertEquals(id[i], sig[i], "key ID byte " + i);
    }
    byte[] ed = new byte[64];
    System.arraycopy(sig, 4, ed, 0, 64);
    assertTrue(jdkVerify(pk, text.getBytes(StandardCharsets.UTF_8), ed));
    byte[] typed = new byte[33];
    typed[0] = 0x01;
    System.arraycopy(pk, 0, typed, 1, 32);
    assertEquals(
        origin
            + "+"
            + Hex.encode(new byte[] {id[0], id[1], id[2], id[3]})
            + "+"
            + Base64.getEncoder().encodeToString(typed),
        log.get("vkey").textValue());
  }

  @Test
  void theFleetProofsHoldAgainstTheirAggregatesAndFailWhenChanged() throws Exception {
    JsonNode file = read("records/records.json");
    Envelope newer = null;
    Envelope older = null;
    for (JsonNode v : file.get("records")) {
      if (v.get("name").textValue().equals("fleet aggregate of 2")) {
        newer = Envelope.fromJson(CanonicalJson.parse(v.get("envelope").textValue()));
      }
      if (v.get("name").textValue().equals("fleet aggregate of 1")) {
        older = Envelope.fromJson(CanonicalJson.parse(v.get("envelope").textValue()));
      }
    }
    PublicKey node = InteropVectors.NODE.publicKey();
    JsonNode fleet = file.get("fleet");
    assertEquals(newer.address(), fleet.get("aggregate").textValue());
    assertEquals(older.address(), fleet.get("old_aggregate").textValue());
    JsonNode proof = fleet.get("fleet_proof");
    assertInstanceOf(
        FleetDocs.Verdict.Valid.class,
        FleetDocs.verifyFleet(proof, newer, Optional.empty(), Optional.of(node)));
    assertInstanceOf(
        FleetDocs.Verdict.Invalid.class,
        FleetDocs.verifyFleet(
            proof, newer, Optional.empty(), Optional.of(InteropVectors.STRANGER.publicKey())));
    ObjectNode moved = proof.deepCopy();
    ((ObjectNode) moved.at("/receipts/0/proof")).put("leaf_index", 1);
    assertInstanceOf(
        FleetDocs.Verdict.Invalid.class,
        FleetDocs.verifyFleet(moved, newer, Optional.empty(), Optional.of(node)));
    JsonNode consistency = fleet.get("fleet_consistency");
    assertInstanceOf(
        FleetDocs.Verdict.Valid.class,
        FleetDocs.verifyFleet(consistency, newer, Optional.of(older), Optional.of(node)));
    assertInstanceOf(
        FleetDocs.Verdict.Invalid.class,
        FleetDocs.verifyFleet(consistency, older, Optional.of(newer), Optional.of(node)));
  }

  @Test
  void everySchemaIdInTheMainSourcesAppearsInAVectorFile() throws IOException {
    Pattern id = Pattern.compile("sandbox\\.[a-z-]*/[0-9]+");
    Set<String> inSources = new TreeSet<>();
    try (Stream<Path> s = Files.walk(root(), 10)) {
      for (Path p :
          s.filter(Files::isRegularFile)
              .filter(p -> p.toString().contains("/src/main/"))
              .filter(p -> !p.toString().contains("/target/"))
              .toList()) {
        Matcher m = id.matcher(Files.readString(p, StandardCharsets.ISO_8859_1));
        while (m.find()) {
          inSources.add(m.group());
        }
      }
    }
    assertTrue(inSources.size() >= 18, "schema ids found: " + inSources);
    StringBuilder all = new StringBuilder();
    try (Stream<Path> s = Files.walk(vectors())) {
      for (Path p :
          s.filter(Files::isRegularFile).filter(f -> f.toString().endsWith(".json")).toList()) {
        all.append(Files.readString(p, StandardCharsets.UTF_8));
      }
    }
    Set<String> missing = new TreeSet<>();
    for (String schema : inSources) {
      if (all.indexOf("\"schema\":\"" + schema + "\"") < 0
          && all.indexOf("\\\"schema\\\":\\\"" + schema + "\\\"") < 0
          && all.indexOf("\"schema\" : \"" + schema + "\"") < 0) {
        missing.add(schema);
      }
    }
    assertEquals(Set.of(), missing, "schema ids with no vector");
    String spec = Files.readString(root().resolve("docs/WIRE.md"), StandardCharsets.UTF_8);
    Set<String> unspecified = new TreeSet<>();
    for (String schema : inSources) {
      String name = schema.substring("sandbox.".length());
      if (!spec.contains(schema) && !spec.contains(name)) {
        unspecified.add(schema);
      }
    }
    assertEquals(Set.of(), unspecified, "schema ids docs/WIRE.md does not specify");
  }

  @Test
  void everyFieldOfEveryVectoredRecordIsNamedInTheSpecification() throws IOException {
    JsonNode file = read("records/records.json");
    List<JsonNode> docs = new ArrayList<>();
    for (JsonNode v : file.get("records")) {
      docs.add(CanonicalJson.parse(v.get("core").textValue()));
    }
    JsonNode content = file.get("content");
    for (JsonNode e : content.get("journal_entries")) {
      docs.add(CanonicalJson.parse(e.get("canonical").textValue()));
    }
    for (String c : List.of("fs_tree", "instance_snapshot", "run_bundle")) {
      docs.add(CanonicalJson.parse(content.get(c).get("canonical").textValue()));
    }
    docs.add(file.at("/node_log/log_proof"));
    docs.add(file.at("/node_log/log_consistency"));
    docs.add(file.at("/fleet/fleet_proof"));
    docs.add(file.at("/fleet/fleet_consistency"));
    String spec = Files.readString(root().resolve("docs/WIRE.md"), StandardCharsets.UTF_8);
    Set<String> unnamed = new TreeSet<>();
    for (JsonNode d : docs) {
      collectUnnamed(d, d.path("schema").asText("?"), spec, unnamed);
    }
    assertEquals(Set.of(), unnamed, "fields docs/WIRE.md never names (as `field`)");
  }

  /** Object keys below {@code n} that the spec never writes as {@code `key`} or {@code "key"}. */
  private static void collectUnnamed(JsonNode n, String schema, String spec, Set<String> out) {
    if (n.isObject()) {
      for (var it = n.fields(); it.hasNext(); ) {
        var f = it.next();
        String k = f.getKey();
        boolean named =
            spec.contains("`" + k + "`")
                || spec.contains("\"" + k + "\"")
                || spec.contains("`" + k + "`:")
                || k.matches("[0-9a-f]{64}|Cpu|Gpu");
        if (!named) {
          out.add(schema + ": " + k);
        }
        collectUnnamed(f.getValue(), schema, spec, out);
      }
    } else if (n.isArray()) {
      n.forEach(e -> collectUnnamed(e, schema, spec, out));
    }
  }

  // ---- independent reference code ----

  private static byte[] leaf(byte[] data) {
    byte[] in = new byte[data.length + 1];
    System.arraycopy(data, 0, in, 1, data.length);
    return Blake3.hash(in);
  }

  /** RFC 9162 MTH over leaf hashes, written out recursively (no frontier, no cache). */
  private static byte[] naiveRoot(List<byte[]> leafHashes) {
    if (leafHashes.isEmpty()) {
      return Blake3.hash(new byte[0]);
    }
    if (leafHashes.size() == 1) {
      return leafHashes.get(0);
    }
    int k = Integer.highestOneBit(leafHashes.size() - 1);
    byte[] l = naiveRoot(leafHashes.subList(0, k));
    byte[] r = naiveRoot(leafHashes.subList(k, leafHashes.size()));
    byte[] in = new byte[65];
    in[0] = 0x01;
    System.arraycopy(l, 0, in, 1, 32);
    System.arraycopy(r, 0, in, 33, 32);
    return Blake3.hash(in);
  }

  /** Ed25519 verification by the JDK's provider, not the project's key classes. */
  static boolean jdkVerify(byte[] publicKey, byte[] message, byte[] signature) throws Exception {
    byte[] le = publicKey.clone();
    boolean xOdd = (le[31] & 0x80) != 0;
    le[31] &= 0x7f;
    byte[] be = new byte[32];
    for (int i = 0; i < 32; i++) {
      be[i] = le[31 - i];
    }
    EdECPublicKeySpec spec =
        new EdECPublicKeySpec(
            NamedParameterSpec.ED25519, new EdECPoint(xOdd, new BigInteger(1, be)));
    Signature s = Signature.getInstance("Ed25519");
    s.initVerify(KeyFactory.getInstance("Ed25519").generatePublic(spec));
    s.update(message);
    return s.verify(signature);
  }
}
