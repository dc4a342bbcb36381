package io.sandboxd.executor;

import com.dylibso.chicory.runtime.GlobalInstance;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.runtime.TableInstance;
import com.dylibso.chicory.wasm.types.MutabilityType;
import com.dylibso.chicory.wasm.types.Value;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.JsonReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.IntStream;

/**
 * The state of a unit's instance at a boundary with no live guest frames: linear memory as 64 KiB
 * pages addressed by BLAKE3-256 (zero pages absent), mutable globals (exported or not), tables and
 * the dropped data and element segments. Restored into a fresh instance of the same module it
 * behaves as the captured one did. Its {@link #address()} is the BLAKE3-256 of its canonical
 * manifest ({@code sandbox.instance-snapshot/1}), which names every other blob by address.
 */
public final class InstanceSnapshot {
  public static final String SCHEMA = "sandbox.instance-snapshot/1";
  public static final int PAGE_BYTES = Memory.PAGE_SIZE;

  /** Entries one table blob may hold (4 bytes each); a larger table is refused. */
  static final int MAX_TABLE_ENTRIES = 10_000_000;

  private static final int ADDRESS_BYTES = Blake3.OUT_LEN;
  private static final byte[] ZERO_PAGE = new byte[PAGE_BYTES];
  private static final byte[] ZERO_ADDRESS = new byte[ADDRESS_BYTES];
  private static final Set<String> KEYS =
      Set.of("schema", "module", "memory", "globals", "tables", "dropped_data", "dropped_elements");

  /** One mutable global: its index in the module's global space, value type and raw bits. */
  public record Global(int index, int type, long low, long high) {}

  /** One table: its index, its size, and the address of its refs (little-endian i32 each). */
  public record Table(int index, int size, String refs) {}

  private final String module;
  // Length = memory pages; a null entry is a zero page. Null when the module has no memory.
  private final String[] pageAddresses;
  private final List<Global> globals;
  private final List<Table> tables;
  private final SortedSet<Integer> droppedData;
  private final SortedSet<Integer> droppedElements;
  // Page and table blobs by address; the page table and the manifest are kept apart.
  private final Map<String, byte[]> content;
  private final byte[] pageTable;
  private final String pageTableAddress;
  private final byte[] manifest;
  private final String address;

  private InstanceSnapshot(
      String module,
      String[] pageAddresses,
      List<Global> globals,
      List<Table> tables,
      SortedSet<Integer> droppedData,
      SortedSet<Integer> droppedElements,
      Map<String, byte[]> content) {
    this.module = module;
    this.pageAddresses = pageAddresses;
    this.globals = List.copyOf(globals);
    this.tables = List.copyOf(tables);
    this.droppedData = Collections.unmodifiableSortedSet(new TreeSet<>(droppedData));
    this.droppedElements = Collections.unmodifiableSortedSet(new TreeSet<>(droppedElements));
    this.content = Collections.unmodifiableMap(content);
    if (pageAddresses != null) {
      byte[] t = new byte[pageAddresses.length * ADDRESS_BYTES];
      for (int i = 0; i < pageAddresses.length; i++) {
        byte[] a =
            pageAddresses[i] == null
                ? ZERO_ADDRESS
                : Hex.decode(pageAddresses[i], ADDRESS_BYTES, "page " + i);
        System.arraycopy(a, 0, t, i * ADDRESS_BYTES, ADDRESS_BYTES);
      }
      this.pageTable = t;
      this.pageTableAddress = Blake3.hex(t);
    } else {
      this.pageTable = null;
      this.pageTableAddress = null;
    }
    this.manifest = CanonicalJson.canonicalize(manifestJson());
    this.address = Blake3.hex(manifest);
  }

  // ---- capture ----

  /**
   * Captures {@code instance} (of the module at {@code moduleAddress}); call only at a boundary,
   * when no guest frame is live. With {@code previous} (a snapshot of the same module, e.g. the one
   * the run resumed from), a page equal to its page at the same index reuses that address without
   * hashing again.
   *
   * @throws SnapshotException.Mismatch for state a snapshot cannot carry (a ref into another
   *     instance, more than one memory)
   */
  public static InstanceSnapshot capture(
      Instance instance, String moduleAddress, InstanceSnapshot previous) {
    if (previous != null && !previous.module.equals(moduleAddress)) {
      previous = null;
    }
    Map<String, byte[]> content = new LinkedHashMap<>();
    String[] pages = capturePages(instance, previous, content);
    List<Global> globals = new ArrayList<>();
    int importedGlobals = instance.imports().globalCount();
    for (int i = importedGlobals; i < instance.globalCount(); i++) {
      GlobalInstance g = instance.global(i);
      if (g.getMutabilityType() == MutabilityType.Var) {
        globals.add(new Global(i, g.getType().opcode(), g.getValueLow(), g.getValueHigh()));
      }
    }
    List<Table> tables = new ArrayList<>();
    int importedTables = instance.imports().tableCount();
    for (int i = importedTables; i < instance.tableCount(); i++) {
      TableInstance t = instance.table(i);
      int size = t.size();
      if (size > MAX_TABLE_ENTRIES) {
        throw new SnapshotException.Mismatch(
            "table " + i + ": " + size + " entries; a snapshot holds at most " + MAX_TABLE_ENTRIES);
      }
      ByteBuffer b = ByteBuffer.allocate(size * 4).order(ByteOrder.LITTLE_ENDIAN);
      for (int j = 0; j < size; j++) {
        Instance owner = t.instance(j);
        if (owner != null && owner != instance) {
          throw new SnapshotException.Mismatch(
              "table " + i + "[" + j + "] refers to another instance's function");
        }
        b.putInt(t.ref(j));
      }
      byte[] refs = b.array();
      String a = Blake3.hex(refs);
      content.put(a, refs);
      tables.add(new Table(i, size, a));
    }
    SortedSet<Integer> droppedData = new TreeSet<>();
    int dataCount = instance.module().dataSection().dataSegmentCount();
    for (int i = 0; i < dataCount; i++) {
      // A dropped segment reads as empty (Chicory swaps in an empty passive segment).
      if (instance.dataSegmentData(i).length == 0
          && instance.module().dataSection().getDataSegment(i).data().length > 0) {
        droppedData.add(i);
      }
    }
    SortedSet<Integer> droppedElements = new TreeSet<>();
    for (int i = 0; i < instance.elementCount(); i++) {
      if (instance.element(i) == null) {
        droppedElements.add(i);
      }
    }
    return new InstanceSnapshot(
        moduleAddress, pages, globals, tables, droppedData, droppedElements, content);
  }

  private static String[] capturePages(
      Instance instance, InstanceSnapshot previous, Map<String, byte[]> content) {
    if (instance.module().memorySection().isEmpty() && instance.imports().memoryCount() == 0) {
      return null;
    }
    if (instance.module().memorySection().map(s -> s.memoryCount()).orElse(0) > 1) {
      throw new SnapshotException.Mismatch(
          "a snapshot holds one linear memory; the module has more");
    }
    Memory m = instance.memory();
    int n = m.pages();
    // One copy out of the instance (sequential: Chicory's memory reads are not thread-safe);
    // that array is hashed and later written as it is.
    byte[][] bytes = new byte[n][];
    for (int i = 0; i < n; i++) {
      bytes[i] = m.readBytes(i * PAGE_BYTES, PAGE_BYTES);
    }
    String[] pages = new String[n];
    String[] before =
        previous != null && previous.pageAddresses != null ? previous.pageAddresses : new String[0];
    // Pages are independent: zero test, comparison with the previous snapshot (an order of
    // magnitude cheaper than hashing) and hashing run on every core.
    IntStream.range(0, n)
        .parallel()
        .forEach(
            i -> {
              byte[] page = bytes[i];
              if (Arrays.equals(page, ZERO_PAGE)) {
                bytes[i] = null;
                return;
              }
              if (i < before.length && before[i] != null) {
                byte[] old = previous.content.get(before[i]);
                if (Arrays.equals(page, old)) {
                  pages[i] = before[i];
                  bytes[i] = old;
                  return;
                }
              }
              pages[i] = Blake3.hex(page);
            });
    for (int i = 0; i < n; i++) {
      if (pages[i] != null) {
        content.putIfAbsent(pages[i], bytes[i]);
      }
    }
    return pages;
  }

  // ---- restore ----

  /**
   * Restores this snapshot into {@code fresh}, a new instance of the module at {@code
   * moduleAddress} that has not run.
   *
   * @throws SnapshotException.Mismatch when the module differs or the instance's limits cannot hold
   *     the snapshot (memory or table growth refused)
   */
  public void restore(Instance fresh, String moduleAddress) {
    if (!module.equals(moduleAddress)) {
      throw new SnapshotException.Mismatch(
          "snapshot of module "
              + module
              + " cannot be restored into an instance of module "
              + moduleAddress);
    }
    if (pageAddresses != null) {
      Memory m = fresh.memory();
      if (m == null) {
        throw new SnapshotException.Mismatch("snapshot has a memory; the instance has none");
      }
      int have = m.pages();
      int want = pageAddresses.length;
      if (want < have) {
        throw new SnapshotException.Mismatch(
            "snapshot memory of " + want + " pages is smaller than the module's initial " + have);
      }
      if (want > have && m.grow(want - have) < 0) {
        throw new SnapshotException.Mismatch(
            "snapshot memory of "
                + want
                + " pages does not fit this instance's limit of "
                + m.maximumPages()
                + " pages");
      }
      for (int i = 0; i < want; i++) {
        if (pageAddresses[i] != null) {
          m.write(i * PAGE_BYTES, content.get(pageAddresses[i]), 0, PAGE_BYTES);
        } else if (i < have) {
          // Only initial pages can hold data segments; grown ones start zero.
          m.fill((byte) 0, i * PAGE_BYTES, (i + 1) * PAGE_BYTES);
        }
      }
    } else if (fresh.module().memorySection().isPresent()) {
      throw new SnapshotException.Mismatch("snapshot has no memory; the instance has one");
    }
    for (Global g : globals) {
      if (g.index() >= fresh.globalCount()) {
        throw new SnapshotException.Mismatch("snapshot global " + g.index() + " does not exist");
      }
      GlobalInstance target = fresh.global(g.index());
      if (target.getMutabilityType() != MutabilityType.Var
          || target.getType().opcode() != g.type()) {
        throw new SnapshotException.Mismatch(
            "snapshot global " + g.index() + " is not a mutable global of type " + g.type());
      }
      target.setValueLow(g.low());
      target.setValueHigh(g.high());
    }
    for (Table t : tables) {
      if (t.index() >= fresh.tableCount()) {
        throw new SnapshotException.Mismatch("snapshot table " + t.index() + " does not exist");
      }
      TableInstance target = fresh.table(t.index());
      if (target.size() > t.size()) {
        throw new SnapshotException.Mismatch(
            "snapshot table " + t.index() + " is smaller than the module's initial size");
      }
      if (target.size() < t.size()
          && target.grow(t.size() - target.size(), Value.REF_NULL_VALUE, fresh) < 0) {
        throw new SnapshotException.Mismatch(
            "snapshot table "
                + t.index()
                + " of "
                + t.size()
                + " entries does not fit this instance");
      }
      ByteBuffer refs = ByteBuffer.wrap(content.get(t.refs())).order(ByteOrder.LITTLE_ENDIAN);
      for (int j = 0; j < t.size(); j++) {
        target.setRef(j, refs.getInt(), fresh);
      }
    }
    int dataCount = fresh.module().dataSection().dataSegmentCount();
    for (int i : droppedData) {
      if (i >= dataCount) {
        throw new SnapshotException.Mismatch("snapshot data segment " + i + " does not exist");
      }
      fresh.dropDataSegment(i);
    }
    for (int i : droppedElements) {
      if (i >= fresh.elementCount()) {
        throw new SnapshotException.Mismatch("snapshot element segment " + i + " does not exist");
      }
      fresh.setElement(i, null);
    }
  }

  // ---- the manifest and its blobs ----

  /** The address of the snapshot: BLAKE3-256 of its canonical manifest, 64 lowercase hex. */
  public String address() {
    return address;
  }

  /** The address of the module the snapshot is of. */
  public String module() {
    return module;
  }

  /** Pages of linear memory, empty for a module without memory. */
  public OptionalInt memoryPages() {
    return pageAddresses == null ? OptionalInt.empty() : OptionalInt.of(pageAddresses.length);
  }

  /** The address of page {@code i}, empty for a zero page. */
  public Optional<String> pageAddress(int i) {
    return Optional.ofNullable(pageAddresses[i]);
  }

  public List<Global> globals() {
    return globals;
  }

  public List<Table> tables() {
    return tables;
  }

  public SortedSet<Integer> droppedData() {
    return droppedData;
  }

  public SortedSet<Integer> droppedElements() {
    return droppedElements;
  }

  /** The canonical manifest bytes (whose BLAKE3-256 is {@link #address()}). */
  public byte[] manifest() {
    return manifest.clone();
  }

  /**
   * Every blob of the snapshot by address: pages and tables first, then the page table, the
   * manifest last (a store writing them in this order never holds a manifest whose blobs are
   * missing). The arrays are shared, not copied: do not modify them.
   */
  public Map<String, byte[]> blobs() {
    Map<String, byte[]> all = new LinkedHashMap<>(content);
    if (pageTable != null) {
      all.put(pageTableAddress, pageTable);
    }
    all.put(address, manifest);
    return Collections.unmodifiableMap(all);
  }

  /**
   * Every blob address the snapshot refers to, the manifest's included, whether or not {@link
   * #blobs()} carries its bytes (a snapshot taken against an earlier one carries only the pages
   * that changed): what the snapshot needs kept.
   */
  public Set<String> addresses() {
    Set<String> all = new java.util.LinkedHashSet<>();
    if (pageAddresses != null) {
      for (String p : pageAddresses) {
        if (p != null) {
          all.add(p);
        }
      }
      all.add(pageTableAddress);
    }
    for (Table t : tables) {
      all.add(t.refs());
    }
    all.addAll(content.keySet());
    all.add(address);
    return all;
  }

  private JsonNode manifestJson() {
    ObjectNode o = JsonNodeFactory.instance.objectNode();
    o.put("schema", SCHEMA);
    o.put("module", module);
    if (pageAddresses == null) {
      o.putNull("memory");
    } else {
      ObjectNode mem = o.putObject("memory");
      mem.put("pages", pageAddresses.length);
      mem.put("page_table", pageTableAddress);
    }
    ArrayNode gs = o.putArray("globals");
    for (Global g : globals) {
      ObjectNode n = gs.addObject();
      n.put("index", g.index());
      n.put("type", g.type());
      // Raw bits as hex: a u64 does not fit a JSON integer (2^53).
      n.put("low", hex64(g.low()));
      n.put("high", hex64(g.high()));
    }
    ArrayNode ts = o.putArray("tables");
    for (Table t : tables) {
      ObjectNode n = ts.addObject();
      n.put("index", t.index());
      n.put("size", t.size());
      n.put("refs", t.refs());
    }
    ArrayNode dd = o.putArray("dropped_data");
    droppedData.forEach(dd::add);
    ArrayNode de = o.putArray("dropped_elements");
    droppedElements.forEach(de::add);
    return o;
  }

  private static String hex64(long v) {
    return String.format("%016x", v);
  }

  /**
   * Reads the snapshot at {@code address} from {@code blobs} (which verifies each blob against its
   * address and throws when one is missing), checking every field.
   *
   * @throws SnapshotException.Malformed naming the field at fault
   */
  static InstanceSnapshot read(String address, Function<String, byte[]> source) {
    Function<String, byte[]> blobs =
        a -> {
          byte[] b = source.apply(a);
          if (b == null) {
            throw new SnapshotException.MissingBlob(a, "of snapshot " + address);
          }
          return b;
        };
    byte[] manifest = blobs.apply(address);
    JsonNode root;
    try {
      root = CanonicalJson.parse(manifest);
    } catch (RuntimeException e) {
      throw new SnapshotException.Malformed(
          "snapshot " + address + ": manifest is not JSON: " + e.getMessage());
    }
    JsonReader.Fault fault =
        (path, problem) -> new SnapshotException.Malformed(path + ": " + problem);
    JsonReader r = JsonReader.of(root, "snapshot " + address, KEYS, fault);
    r.schema(SCHEMA);
    String module = r.hex32("module");
    String[] pages = null;
    Map<String, byte[]> content = new LinkedHashMap<>();
    JsonNode mem = r.required("memory");
    if (!mem.isNull()) {
      JsonReader m = JsonReader.of(mem, r.pathOf("memory"), Set.of("pages", "page_table"), fault);
      int n = (int) m.integer("pages", 0, 0, Memory.RUNTIME_MAX_PAGES);
      String tableAddress = m.hex32("page_table");
      byte[] table = blobs.apply(tableAddress);
      if (table.length != n * ADDRESS_BYTES) {
        throw fault.at(
            m.pathOf("page_table"),
            table.length + " bytes; " + n + " pages need " + (n * ADDRESS_BYTES));
      }
      pages = new String[n];
      List<String> distinct = new ArrayList<>();
      List<Integer> firstIndex = new ArrayList<>();
      Set<String> seen = new java.util.HashSet<>();
      for (int i = 0; i < n; i++) {
        byte[] a = Arrays.copyOfRange(table, i * ADDRESS_BYTES, (i + 1) * ADDRESS_BYTES);
        if (Arrays.equals(a, ZERO_ADDRESS)) {
          continue;
        }
        pages[i] = Hex.encode(a);
        if (seen.add(pages[i])) {
          distinct.add(pages[i]);
          firstIndex.add(i);
        }
      }
      // Reading and verifying pages runs on every core; a failure is reported for the first page
      // in page order, whichever thread met it.
      byte[][] fetched = new byte[distinct.size()][];
      RuntimeException[] failed = new RuntimeException[distinct.size()];
      IntStream.range(0, distinct.size())
          .parallel()
          .forEach(
              k -> {
                try {
                  fetched[k] = blobs.apply(distinct.get(k));
                } catch (RuntimeException e) {
                  failed[k] = e;
                }
              });
      for (int k = 0; k < distinct.size(); k++) {
        if (failed[k] != null) {
          throw failed[k];
        }
        if (fetched[k].length != PAGE_BYTES) {
          throw fault.at(
              m.pathOf("page_table") + "[" + firstIndex.get(k) + "]",
              "blob " + distinct.get(k) + " has " + fetched[k].length + " bytes, not one page");
        }
        content.put(distinct.get(k), fetched[k]);
      }
    }
    List<Global> globals =
        r.list(
            "globals",
            (n, p) -> {
              JsonReader g = JsonReader.of(n, p, Set.of("index", "type", "low", "high"), fault);
              return new Global(
                  (int) g.integer("index", 0, 0, Integer.MAX_VALUE),
                  (int) g.integer("type", 0, 0, Integer.MAX_VALUE),
                  bits(g, "low", fault),
                  bits(g, "high", fault));
            });
    List<Table> tables =
        r.list(
            "tables",
            (n, p) -> {
              JsonReader t = JsonReader.of(n, p, Set.of("index", "size", "refs"), fault);
              Table table =
                  new Table(
                      (int) t.integer("index", 0, 0, Integer.MAX_VALUE),
                      (int) t.integer("size", 0, 0, MAX_TABLE_ENTRIES),
                      t.hex32("refs"));
              byte[] refs = blobs.apply(table.refs());
              if (refs.length != table.size() * 4) {
                throw fault.at(
                    t.pathOf("refs"),
                    refs.length + " bytes; " + table.size() + " entries need " + table.size() * 4);
              }
              content.put(table.refs(), refs);
              return table;
            });
    SortedSet<Integer> droppedData = indices(r, "dropped_data", fault);
    SortedSet<Integer> droppedElements = indices(r, "dropped_elements", fault);
    InstanceSnapshot s =
        new InstanceSnapshot(module, pages, globals, tables, droppedData, droppedElements, content);
    if (!s.address.equals(address)) {
      // Parsing accepted a manifest that is not in canonical form: one spelling per snapshot.
      throw new SnapshotException.Malformed(
          "snapshot "
              + address
              + ": manifest is not canonical (it reads back as "
              + s.address
              + ")");
    }
    return s;
  }

  private static long bits(JsonReader r, String key, JsonReader.Fault fault) {
    String s = r.string(key);
    if (!s.matches("[0-9a-f]{16}")) {
      throw fault.at(r.pathOf(key), "expected 16 lowercase hex digits");
    }
    return Long.parseUnsignedLong(s, 16);
  }

  private static SortedSet<Integer> indices(JsonReader r, String key, JsonReader.Fault fault) {
    return new TreeSet<>(
        r.list(key, (n, p) -> (int) JsonReader.integer(n, p, 0, Integer.MAX_VALUE, fault)));
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof InstanceSnapshot s && s.address.equals(address);
  }

  @Override
  public int hashCode() {
    return address.hashCode();
  }

  @Override
  public String toString() {
    return "InstanceSnapshot[" + address + " of " + module + "]";
  }
}
