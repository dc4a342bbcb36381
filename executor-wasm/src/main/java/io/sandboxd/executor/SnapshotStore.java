package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.JsonReader;
import io.sandboxd.attest.PrivateFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * The node's content-addressed store of instance snapshots and storage trees, under {@code
 * <state>/snapshots/}. Blobs are addressed by their BLAKE3-256, so a page held by many snapshots
 * (of one run or many) is stored once. The blobs new to one put go into one pack file ({@code
 * packs/<name>.pack}: records, then an index trailer), written to a temporary file, fsynced,
 * renamed into place and the directory fsynced before the put returns: one fsync per put, not one
 * per page. Every blob read back is checked against its address.
 */
public final class SnapshotStore {
  /** The schema of a storage tree's manifest. */
  public static final String TREE_SCHEMA = "sandbox.fs-tree/1";

  private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");
  private static final Set<String> TREE_KEYS = Set.of("schema", "dirs", "files");

  /**
   * Bounds of a storage tree: files, total bytes, bytes of one file, directory depth, path length.
   */
  public record TreeLimits(long maxFiles, long maxBytes, long maxFileBytes, int maxDepth) {
    public static final TreeLimits DEFAULT = new TreeLimits(100_000, 1L << 30, 256L << 20, 64);
    static final int MAX_PATH_BYTES = 4096;
  }

  private static final long MAGIC = 0x314b434150584253L; // "SBXPACK1", little-endian
  private static final int RECORD_HEADER = Blake3.OUT_LEN + 8;
  private static final int TRAILER_ENTRY = Blake3.OUT_LEN + 16;

  private final Path dir;
  private final Path packs;
  private final TreeLimits limits;

  /** Where one blob lies: its pack, offset of its bytes, length. */
  record Location(Path pack, long offset, int length) {}

  // Every blob held, built from the packs' trailers at open.
  private final Map<String, Location> index = new ConcurrentHashMap<>();
  // Packs mapped for reading (packs are immutable once renamed into place): a blob is copied once,
  // from the page cache into its array. Absolute reads of a mapping are safe from many threads.
  private final Map<Path, MappedByteBuffer> readers = new ConcurrentHashMap<>();
  private final AtomicLong bytesWritten = new AtomicLong();
  private final AtomicLong blobsWritten = new AtomicLong();

  private SnapshotStore(Path dir, TreeLimits limits) {
    this.dir = dir;
    this.packs = dir.resolve("packs");
    this.limits = limits;
  }

  /**
   * Opens (creating, mode 0700) the store in {@code dir}, removing what a crash left half-written.
   */
  public static SnapshotStore open(Path dir) {
    return open(dir, TreeLimits.DEFAULT);
  }

  public static SnapshotStore open(Path dir, TreeLimits limits) {
    SnapshotStore s = new SnapshotStore(dir, limits);
    try {
      StoreFiles.createPrivateDir(dir);
      for (Path f : StoreFiles.openSwept(s.packs)) {
        if (f.getFileName().toString().endsWith(".pack")) {
          s.indexPack(f);
        }
      }
    } catch (IOException e) {
      throw new SnapshotException("snapshot store " + dir + ": cannot open: " + e, e);
    }
    return s;
  }

  public Path dir() {
    return dir;
  }

  /**
   * Bytes of blobs this store wrote since it was opened (blobs it already held are not counted).
   */
  public long bytesWritten() {
    return bytesWritten.get();
  }

  /** Blobs this store wrote since it was opened. */
  public long blobsWritten() {
    return blobsWritten.get();
  }

  // ---- snapshots ----

  /**
   * Stores {@code snapshot} (pages it already holds are not written again); returns its address.
   */
  public String put(InstanceSnapshot snapshot) {
    writeAll(snapshot.blobs());
    return snapshot.address();
  }

  /**
   * Loads the snapshot at {@code address}, every blob checked against its address.
   *
   * @throws SnapshotException.MissingBlob naming the first blob not held
   * @throws SnapshotException.DamagedBlob naming the first blob whose bytes do not match
   * @throws SnapshotException.Malformed when the manifest is not a snapshot manifest
   */
  public InstanceSnapshot load(String address) {
    requireAddress(address, "snapshot address");
    return InstanceSnapshot.read(address, a -> read(a, "of snapshot " + address));
  }

  /** Whether the blob {@code address} is held (its bytes are not checked). */
  public boolean has(String address) {
    requireAddress(address, "address");
    return index.containsKey(address);
  }

  /**
   * Every blob of the snapshot or storage tree at {@code address}, the root manifest last, each
   * verified: what an export carries.
   */
  public Map<String, byte[]> blobs(String address) {
    requireAddress(address, "address");
    byte[] root = read(address, "root");
    JsonNode n;
    try {
      n = CanonicalJson.parse(root);
    } catch (RuntimeException e) {
      throw new SnapshotException.Malformed(address + ": not a snapshot or tree manifest");
    }
    String schema = n.path("schema").asText("");
    if (schema.equals(InstanceSnapshot.SCHEMA)) {
      return load(address).blobs();
    }
    if (schema.equals(TREE_SCHEMA)) {
      Map<String, byte[]> out = new LinkedHashMap<>();
      for (TreeFile f : readTree(address, root)) {
        out.putIfAbsent(f.blob(), read(f.blob(), "file " + f.path() + " of tree " + address));
      }
      out.put(address, root);
      return out;
    }
    throw new SnapshotException.Malformed(
        address + ": schema \"" + schema + "\" is neither a snapshot nor a storage tree");
  }

  /**
   * Stores blobs brought from elsewhere (an import): every one is checked against its address
   * before any is written, so a bad bundle stores nothing.
   *
   * @throws SnapshotException.DamagedBlob naming the first blob whose bytes do not match
   */
  public void putBlobs(Map<String, byte[]> incoming) {
    for (Map.Entry<String, byte[]> e : incoming.entrySet()) {
      requireAddress(e.getKey(), "blob address");
      String actual = Blake3.hex(e.getValue());
      if (!actual.equals(e.getKey())) {
        throw new SnapshotException.DamagedBlob(e.getKey(), actual);
      }
    }
    writeAll(incoming);
  }

  // ---- storage trees ----

  /** One file of a tree: its path (relative, '/'-separated), size and blob. */
  public record TreeFile(String path, long size, String blob) {}

  /**
   * Stores the regular files and directories under {@code root} as a tree manifest ({@code
   * sandbox.fs-tree/1}) and one blob per distinct file content; returns the manifest's address. An
   * absent root is the empty tree.
   *
   * @throws SnapshotException.Refused for a symlink, a special file, or a tree over the limits
   */
  public String putTree(Path root) {
    return putTree(treeContent(root));
  }

  /**
   * A storage tree read but not yet stored: its manifest's address and every blob, manifest last.
   */
  public record TreeContent(String address, Map<String, byte[]> blobs) {}

  /**
   * Reads the files under {@code root} as {@link #putTree(Path)} does, storing nothing (so what it
   * would add can be weighed first).
   *
   * @throws SnapshotException.Refused for a symlink, a special file, or a tree over the limits
   */
  public TreeContent treeContent(Path root) {
    TreeSet<String> dirs = new TreeSet<>();
    TreeMap<String, TreeFile> files = new TreeMap<>();
    Map<String, byte[]> content = new LinkedHashMap<>();
    if (Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
      if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
        // Relative like every other refusal of a tree: it may end up in a signed outcome.
        throw new SnapshotException.Refused("storage tree: its root is not a directory");
      }
      walk(root, dirs, files, content);
    }
    byte[] manifest = treeManifest(dirs, files.values());
    String address = Blake3.hex(manifest);
    content.put(address, manifest);
    return new TreeContent(address, content);
  }

  /** Stores a tree read by {@link #treeContent}; returns its manifest's address. */
  public String putTree(TreeContent tree) {
    writeAll(tree.blobs());
    return tree.address();
  }

  /**
   * The size of each blob of {@code addresses}, all held.
   *
   * @throws SnapshotException.MissingBlob naming the first not held
   */
  public Map<String, Long> sizes(Set<String> addresses) {
    Map<String, Long> out = new LinkedHashMap<>();
    for (String a : addresses) {
      Location at = index.get(a);
      if (at == null) {
        throw new SnapshotException.MissingBlob(a, "to size");
      }
      out.put(a, (long) at.length());
    }
    return out;
  }

  /** Bytes of the blobs of {@code blobs} this store does not hold yet: what storing them adds. */
  public long freshBytes(Map<String, byte[]> blobs) {
    long n = 0;
    for (Map.Entry<String, byte[]> e : blobs.entrySet()) {
      if (!index.containsKey(e.getKey())) {
        n += e.getValue().length;
      }
    }
    return n;
  }

  /**
   * Deletes the blobs {@code addresses} (those held): a pack holding only such blobs is removed,
   * one holding others too is rewritten with the others first (new pack fsynced and renamed into
   * place before the old one goes), so a crash leaves every blob not deleted readable. Returns the
   * bytes of blobs deleted.
   */
  public synchronized long drop(Set<String> addresses) {
    Map<Path, List<String>> byPack = new LinkedHashMap<>();
    for (String a : addresses) {
      Location at = index.get(a);
      if (at != null) {
        byPack.computeIfAbsent(at.pack(), p -> new ArrayList<>()).add(a);
      }
    }
    // Each touched pack's members, from one pass over the index (not one pass per pack).
    Map<Path, List<String>> members = new LinkedHashMap<>();
    for (Map.Entry<String, Location> i : index.entrySet()) {
      if (byPack.containsKey(i.getValue().pack())) {
        members.computeIfAbsent(i.getValue().pack(), p -> new ArrayList<>()).add(i.getKey());
      }
    }
    long freed = 0;
    for (Map.Entry<Path, List<String>> e : byPack.entrySet()) {
      Path pack = e.getKey();
      Set<String> doomed = new java.util.HashSet<>(e.getValue());
      List<String> kept = new ArrayList<>();
      for (String a : members.getOrDefault(pack, List.of())) {
        if (!doomed.contains(a)) {
          kept.add(a);
        }
      }
      rewrite(pack, kept);
      for (String a : doomed) {
        Location at = index.remove(a);
        if (at != null) {
          freed += at.length();
        }
      }
      try {
        if (index.values().stream().noneMatch(l -> l.pack().equals(pack))) {
          readers.remove(pack);
          Files.deleteIfExists(pack);
        }
        PrivateFile.syncDirectory(packs);
      } catch (IOException ex) {
        throw new SnapshotException(
            "snapshot store " + dir + ": cannot delete " + pack + ": " + ex, ex);
      }
    }
    return freed;
  }

  /** Most bytes of kept blobs a rewrite holds in memory at once. */
  private static final long REWRITE_BATCH_BYTES = 64L << 20;

  /**
   * Writes the blobs {@code kept} of {@code pack} into new packs, at most {@link
   * #REWRITE_BATCH_BYTES} read at a time, so that freeing part of a large snapshot never holds all
   * of what stays in memory. The index then points at the new packs, not at the one going away.
   */
  private void rewrite(Path pack, List<String> kept) {
    Map<String, byte[]> batch = new LinkedHashMap<>();
    long bytes = 0;
    for (String a : kept) {
      byte[] b = read(a, "kept in pack " + pack.getFileName());
      if (!batch.isEmpty() && bytes + b.length > REWRITE_BATCH_BYTES) {
        flushRewrite(batch);
        bytes = 0;
      }
      batch.put(a, b);
      bytes += b.length;
    }
    flushRewrite(batch);
  }

  private void flushRewrite(Map<String, byte[]> batch) {
    if (batch.isEmpty()) {
      return;
    }
    // Each kept blob's entry moves to the new pack in one put: a reader never finds it absent
    // (a reader that took the old place reads the old pack, or retries where the blob lies now).
    index.putAll(writePack(batch));
    batch.clear();
  }

  private void walk(
      Path root, TreeSet<String> dirs, TreeMap<String, TreeFile> files, Map<String, byte[]> out) {
    long[] total = {0};
    try {
      Files.walkFileTree(
          root,
          Set.of(),
          limits.maxDepth() + 1,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes a) {
              if (!d.equals(root)) {
                String rel = rel(root, d);
                if (d.getNameCount() - root.getNameCount() > limits.maxDepth()) {
                  throw new SnapshotException.Refused(
                      "storage tree: " + rel + " is deeper than " + limits.maxDepth());
                }
                dirs.add(rel);
                count(dirs.size() + files.size());
              }
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
              String rel = rel(root, f);
              if (a.isSymbolicLink()) {
                throw new SnapshotException.Refused("storage tree: " + rel + " is a symlink");
              }
              if (a.isDirectory()) {
                // Past the depth walkFileTree descends: reported as a file.
                throw new SnapshotException.Refused(
                    "storage tree: " + rel + " is deeper than " + limits.maxDepth());
              }
              if (!a.isRegularFile()) {
                throw new SnapshotException.Refused(
                    "storage tree: " + rel + " is not a regular file or directory");
              }
              if (a.size() > limits.maxFileBytes()) {
                throw new SnapshotException.Refused(
                    "storage tree: "
                        + rel
                        + " has "
                        + a.size()
                        + " bytes; the limit per file is "
                        + limits.maxFileBytes());
              }
              total[0] += a.size();
              if (total[0] > limits.maxBytes()) {
                throw new SnapshotException.Refused(
                    "storage tree: more than " + limits.maxBytes() + " bytes in all");
              }
              count(dirs.size() + files.size() + 1);
              byte[] bytes = Files.readAllBytes(f);
              if (bytes.length > limits.maxFileBytes()) {
                throw new SnapshotException.Refused(
                    "storage tree: " + rel + " grew past " + limits.maxFileBytes() + " bytes");
              }
              String blob = Blake3.hex(bytes);
              out.putIfAbsent(blob, bytes);
              files.put(rel, new TreeFile(rel, bytes.length, blob));
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path f, IOException e) throws IOException {
              throw e;
            }
          });
    } catch (IOException e) {
      throw new SnapshotException("storage tree " + root + ": cannot read: " + e, e);
    }
  }

  private void count(long entries) {
    if (entries > limits.maxFiles()) {
      throw new SnapshotException.Refused(
          "storage tree: more than " + limits.maxFiles() + " files and directories");
    }
  }

  private static String rel(Path root, Path p) {
    String rel = root.relativize(p).toString().replace('\\', '/');
    if (rel.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > TreeLimits.MAX_PATH_BYTES) {
      throw new SnapshotException.Refused(
          "storage tree: a path is longer than " + TreeLimits.MAX_PATH_BYTES + " bytes");
    }
    return rel;
  }

  private static byte[] treeManifest(Set<String> dirs, Iterable<TreeFile> files) {
    ObjectNode o = JsonNodeFactory.instance.objectNode();
    o.put("schema", TREE_SCHEMA);
    ArrayNode ds = o.putArray("dirs");
    dirs.forEach(ds::add);
    ArrayNode fs = o.putArray("files");
    for (TreeFile f : files) {
      ObjectNode n = fs.addObject();
      n.put("path", f.path());
      n.put("size", f.size());
      n.put("blob", f.blob());
    }
    return CanonicalJson.canonicalize(o);
  }

  /** The files of the tree at {@code address}, each checked (path and blob address). */
  public List<TreeFile> tree(String address) {
    requireAddress(address, "tree address");
    return readTree(address, read(address, "tree"));
  }

  private List<TreeFile> readTree(String address, byte[] manifest) {
    JsonReader.Fault fault =
        (path, problem) -> new SnapshotException.Malformed(path + ": " + problem);
    JsonNode n;
    try {
      n = CanonicalJson.parse(manifest);
    } catch (RuntimeException e) {
      throw new SnapshotException.Malformed("tree " + address + ": not JSON: " + e.getMessage());
    }
    JsonReader r = JsonReader.of(n, "tree " + address, TREE_KEYS, fault);
    r.schema(TREE_SCHEMA);
    List<String> dirs = r.strings("dirs", List.of());
    for (int i = 0; i < dirs.size(); i++) {
      checkPath(dirs.get(i), r.pathOf("dirs") + "[" + i + "]");
    }
    List<TreeFile> files =
        r.list(
            "files",
            (e, p) -> {
              JsonReader f = JsonReader.of(e, p, Set.of("path", "size", "blob"), fault);
              String path = f.string("path");
              checkPath(path, f.pathOf("path"));
              return new TreeFile(path, f.integer("size", 0, 0, Long.MAX_VALUE), f.hex32("blob"));
            });
    if (files.size() + dirs.size() > limits.maxFiles()) {
      throw new SnapshotException.Refused(
          "tree " + address + ": more than " + limits.maxFiles() + " entries");
    }
    return files;
  }

  private static void checkPath(String path, String field) {
    boolean bad = path.isEmpty() || path.startsWith("/") || path.indexOf('\0') >= 0;
    for (String part : path.split("/", -1)) {
      bad |= part.isEmpty() || part.equals(".") || part.equals("..");
    }
    if (bad) {
      throw new SnapshotException.Malformed(
          field + ": \"" + path + "\" is not a relative path inside the tree");
    }
  }

  /**
   * Writes the tree at {@code address} into {@code target} (absent or an empty directory), every
   * blob checked before anything is written, every file fsynced.
   */
  public void restoreTree(String address, Path target) {
    requireAddress(address, "tree address");
    byte[] manifest = read(address, "tree");
    JsonNode n = CanonicalJson.parse(manifest);
    List<TreeFile> files = readTree(address, manifest);
    Map<String, byte[]> content = new LinkedHashMap<>();
    long total = 0;
    for (TreeFile f : files) {
      total += f.size();
      if (f.size() > limits.maxFileBytes() || total > limits.maxBytes()) {
        throw new SnapshotException.Refused("tree " + address + ": over the size limits");
      }
      byte[] b = content.get(f.blob());
      if (b == null) {
        b = read(f.blob(), "file " + f.path() + " of tree " + address);
        content.put(f.blob(), b);
      }
      if (b.length != f.size()) {
        throw new SnapshotException.Malformed(
            "tree "
                + address
                + ": "
                + f.path()
                + " is "
                + f.size()
                + " bytes; its blob has "
                + b.length);
      }
    }
    try {
      if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
        if (!Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
          throw new SnapshotException.Refused("restore target " + target + " is not a directory");
        }
        try (DirectoryStream<Path> d = Files.newDirectoryStream(target)) {
          if (d.iterator().hasNext()) {
            throw new SnapshotException.Refused("restore target " + target + " is not empty");
          }
        }
      } else {
        Files.createDirectories(target);
      }
      for (JsonNode d : n.path("dirs")) {
        Files.createDirectories(target.resolve(d.asText()));
      }
      for (TreeFile f : files) {
        Path p = target.resolve(f.path());
        Files.createDirectories(p.getParent());
        try (FileChannel ch =
            FileChannel.open(
                p,
                StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS)) {
          PrivateFile.writeFully(ch, content.get(f.blob()));
          ch.force(true);
        }
      }
      PrivateFile.syncDirectory(target);
    } catch (IOException e) {
      throw new SnapshotException("restore tree " + address + " into " + target + ": " + e, e);
    }
  }

  // ---- blobs on disk ----

  /** Reads a pack's trailer into the index; a pack that is not well formed stops the open. */
  private void indexPack(Path pack) throws IOException {
    try (FileChannel ch = FileChannel.open(pack, StandardOpenOption.READ)) {
      long size = ch.size();
      ByteBuffer tail = readAt(ch, size - 16, 16);
      long trailer = tail.getLong();
      if (size < 16 || tail.getLong() != MAGIC || trailer < 0 || trailer > size - 20) {
        throw new SnapshotException("snapshot pack " + pack + " has no valid trailer", null);
      }
      int count = readAt(ch, trailer, 4).getInt();
      if ((long) count * TRAILER_ENTRY != size - 16 - trailer - 4) {
        throw new SnapshotException("snapshot pack " + pack + ": trailer count " + count, null);
      }
      ByteBuffer t = readAt(ch, trailer + 4, count * TRAILER_ENTRY);
      byte[] a = new byte[Blake3.OUT_LEN];
      for (int i = 0; i < count; i++) {
        t.get(a);
        long offset = t.getLong();
        long length = t.getLong();
        if (offset < 0 || length < 0 || length > Integer.MAX_VALUE || offset + length > trailer) {
          throw new SnapshotException(
              "snapshot pack " + pack + ": entry " + i + " out of range", null);
        }
        index.putIfAbsent(Hex.encode(a), new Location(pack, offset, (int) length));
      }
    }
  }

  private static ByteBuffer readAt(FileChannel ch, long position, int length) throws IOException {
    if (position < 0) {
      throw new IOException("negative offset");
    }
    ByteBuffer b = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
    while (b.hasRemaining()) {
      if (ch.read(b, position + b.position()) < 0) {
        throw new IOException("unexpected end of file");
      }
    }
    return b.flip();
  }

  /** Where the blob lies in its pack (tests damage it there). */
  Location locate(String address) {
    return index.get(address);
  }

  /** A blob's bytes, checked against its address. */
  byte[] read(String address, String what) {
    try {
      return readAt(address, what, index.get(address));
    } catch (SnapshotException e) {
      // Moved by a drop (its pack rewritten) while it was read: read it where it lies now.
      Location now = index.get(address);
      if (now == null || e instanceof SnapshotException.DamagedBlob) {
        throw e;
      }
      return readAt(address, what, now);
    }
  }

  private byte[] readAt(String address, String what, Location at) {
    if (at == null) {
      throw new SnapshotException.MissingBlob(address, what);
    }
    byte[] b = new byte[at.length()];
    try {
      MappedByteBuffer map = readers.computeIfAbsent(at.pack(), SnapshotStore::map);
      if (map != null) {
        map.get((int) at.offset(), b);
      } else {
        // A pack past what one mapping holds (2 GiB): read from the file.
        try (FileChannel ch = FileChannel.open(at.pack(), StandardOpenOption.READ)) {
          readAt(ch, at.offset(), at.length()).get(b);
        }
      }
    } catch (IOException | java.io.UncheckedIOException e) {
      throw new SnapshotException("snapshot blob " + address + ": cannot read: " + e, e);
    }
    String actual = Blake3.hex(b);
    if (!actual.equals(address)) {
      throw new SnapshotException.DamagedBlob(address, actual);
    }
    return b;
  }

  /** The pack mapped read-only, or null when it is too large for one mapping. */
  private static MappedByteBuffer map(Path pack) {
    try (FileChannel ch = FileChannel.open(pack, StandardOpenOption.READ)) {
      long size = ch.size();
      return size > Integer.MAX_VALUE ? null : ch.map(FileChannel.MapMode.READ_ONLY, 0, size);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * Writes the blobs not yet held as one pack, durable before the call returns. Puts are
   * serialized: two writers never pack the same blob twice.
   */
  private synchronized void writeAll(Map<String, byte[]> all) {
    Map<String, byte[]> fresh = new LinkedHashMap<>();
    for (Map.Entry<String, byte[]> e : all.entrySet()) {
      if (!index.containsKey(e.getKey())) {
        fresh.putIfAbsent(e.getKey(), e.getValue());
      }
    }
    if (fresh.isEmpty()) {
      return;
    }
    index.putAll(writePack(fresh));
  }

  /**
   * Writes {@code fresh} as one new pack (fsynced, renamed into place); returns where each lies.
   */
  private synchronized Map<String, Location> writePack(Map<String, byte[]> fresh) {
    // Named by the BLAKE3 of the addresses it holds: cheap, and unique per content.
    StringBuilder names = new StringBuilder();
    fresh.keySet().forEach(names::append);
    Path target =
        packs.resolve(
            Blake3.hex(names.toString().getBytes(java.nio.charset.StandardCharsets.US_ASCII))
                + ".pack");
    Path tmp =
        packs.resolve(
            StoreFiles.TMP_PREFIX + Long.toHexString(ThreadLocalRandom.current().nextLong()));
    Map<String, Location> added = new LinkedHashMap<>();
    long bytes = 0;
    try {
      try (FileChannel ch =
          FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        long position = 0;
        ByteBuffer trailer =
            ByteBuffer.allocate(4 + fresh.size() * TRAILER_ENTRY + 16)
                .order(ByteOrder.LITTLE_ENDIAN);
        trailer.putInt(fresh.size());
        List<ByteBuffer> batch = new ArrayList<>();
        for (Map.Entry<String, byte[]> e : fresh.entrySet()) {
          byte[] address = Hex.decode(e.getKey(), Blake3.OUT_LEN, "blob address");
          byte[] value = e.getValue();
          ByteBuffer header = ByteBuffer.allocate(RECORD_HEADER).order(ByteOrder.LITTLE_ENDIAN);
          header.put(address).putLong(value.length).flip();
          // Gathered: the page arrays go to the file as they are, not copied into a buffer.
          batch.add(header);
          batch.add(ByteBuffer.wrap(value));
          long offset = position + RECORD_HEADER;
          trailer.put(address).putLong(offset).putLong(value.length);
          added.put(e.getKey(), new Location(target, offset, value.length));
          position = offset + value.length;
          bytes += value.length;
          if (batch.size() >= 512) {
            writeFully(ch, batch);
          }
        }
        trailer.putLong(position).putLong(MAGIC).flip();
        batch.add(trailer);
        writeFully(ch, batch);
        ch.force(true);
      }
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
      PrivateFile.syncDirectory(packs);
    } catch (IOException e) {
      try {
        Files.deleteIfExists(tmp);
      } catch (IOException ignored) {
        // The next open removes it.
      }
      throw new SnapshotException("snapshot store " + dir + ": cannot write: " + e, e);
    }
    bytesWritten.addAndGet(bytes);
    blobsWritten.addAndGet(added.size());
    return added;
  }

  private static void writeFully(FileChannel ch, List<ByteBuffer> batch) throws IOException {
    ByteBuffer[] bufs = batch.toArray(new ByteBuffer[0]);
    long remaining = 0;
    for (ByteBuffer b : bufs) {
      remaining += b.remaining();
    }
    while (remaining > 0) {
      remaining -= ch.write(bufs);
    }
    batch.clear();
  }

  private static void requireAddress(String address, String field) {
    if (address == null || !HEX64.matcher(address).matches()) {
      throw new SnapshotException.Malformed(
          field + ": \"" + address + "\" is not 64 lowercase hex (a BLAKE3-256 address)");
    }
  }

  /** All blob addresses held (for audits and tests). */
  List<String> held() {
    return new ArrayList<>(index.keySet());
  }

  /** Drops the read mappings (the JVM unmaps them when they are collected). */
  public void close() {
    readers.clear();
  }
}
