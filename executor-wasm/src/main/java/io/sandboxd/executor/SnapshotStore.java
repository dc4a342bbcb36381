package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
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
 * <state>/snapshots/}: one file per blob, named by its BLAKE3-256, so a page held by many snapshots
 * (of one run or many) is stored once. Every blob is written to a temporary file, fsynced, renamed
 * into place and its directory fsynced before {@link #put} returns; every blob read back is checked
 * against its address.
 */
public final class SnapshotStore {
  /** The schema of a storage tree's manifest. */
  public static final String TREE_SCHEMA = "sandbox.fs-tree/1";

  private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");
  private static final String TMP_PREFIX = ".incoming-";
  private static final Set<String> TREE_KEYS = Set.of("schema", "dirs", "files");

  /**
   * Bounds of a storage tree: files, total bytes, bytes of one file, directory depth, path length.
   */
  public record TreeLimits(long maxFiles, long maxBytes, long maxFileBytes, int maxDepth) {
    public static final TreeLimits DEFAULT = new TreeLimits(100_000, 1L << 30, 256L << 20, 64);
    static final int MAX_PATH_BYTES = 4096;
  }

  private final Path dir;
  private final Path blobs;
  private final TreeLimits limits;
  // Addresses known to be on disk (written or seen by this process): skips a stat per page.
  private final Set<String> known = ConcurrentHashMap.newKeySet();
  private final AtomicLong bytesWritten = new AtomicLong();
  private final AtomicLong blobsWritten = new AtomicLong();

  private SnapshotStore(Path dir, TreeLimits limits) {
    this.dir = dir;
    this.blobs = dir.resolve("blobs");
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
      createPrivateDir(dir);
      createPrivateDir(s.blobs);
      try (DirectoryStream<Path> files = Files.newDirectoryStream(s.blobs, TMP_PREFIX + "*")) {
        for (Path f : files) {
          Files.deleteIfExists(f);
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
    return known.contains(address) || Files.isRegularFile(blobPath(address));
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
    TreeSet<String> dirs = new TreeSet<>();
    TreeMap<String, TreeFile> files = new TreeMap<>();
    Map<String, byte[]> content = new LinkedHashMap<>();
    if (Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
      if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
        throw new SnapshotException.Refused("storage tree " + root + " is not a directory");
      }
      walk(root, dirs, files, content);
    }
    byte[] manifest = treeManifest(dirs, files.values());
    String address = Blake3.hex(manifest);
    content.put(address, manifest);
    writeAll(content);
    return address;
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
          writeFully(ch, content.get(f.blob()));
          ch.force(true);
        }
      }
      fsyncDir(target);
    } catch (IOException e) {
      throw new SnapshotException("restore tree " + address + " into " + target + ": " + e, e);
    }
  }

  // ---- blobs on disk ----

  private Path blobPath(String address) {
    return blobs.resolve(address.substring(0, 2)).resolve(address);
  }

  /** A blob's bytes, checked against its address. */
  byte[] read(String address, String what) {
    byte[] b;
    try {
      b = Files.readAllBytes(blobPath(address));
    } catch (NoSuchFileException e) {
      throw new SnapshotException.MissingBlob(address, what);
    } catch (IOException e) {
      throw new SnapshotException("snapshot blob " + address + ": cannot read: " + e, e);
    }
    String actual = Blake3.hex(b);
    if (!actual.equals(address)) {
      throw new SnapshotException.DamagedBlob(address, actual);
    }
    known.add(address);
    return b;
  }

  /** Writes the blobs not yet held, in the map's order, each durable before the call returns. */
  private void writeAll(Map<String, byte[]> all) {
    Set<Path> touchedDirs = new java.util.LinkedHashSet<>();
    try {
      for (Map.Entry<String, byte[]> e : all.entrySet()) {
        String a = e.getKey();
        if (known.contains(a)) {
          continue;
        }
        Path target = blobPath(a);
        if (Files.isRegularFile(target)) {
          known.add(a);
          continue;
        }
        Path fan = target.getParent();
        if (!Files.isDirectory(fan)) {
          Files.createDirectories(fan);
          touchedDirs.add(blobs);
        }
        Path tmp =
            blobs.resolve(TMP_PREFIX + Long.toHexString(ThreadLocalRandom.current().nextLong()));
        try (FileChannel ch =
            FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
          writeFully(ch, e.getValue());
          ch.force(false);
        }
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        touchedDirs.add(fan);
        touchedDirs.add(blobs);
        known.add(a);
        bytesWritten.addAndGet(e.getValue().length);
        blobsWritten.incrementAndGet();
      }
      // The renames are durable once their directories are: one fsync per directory per put.
      for (Path d : touchedDirs) {
        fsyncDir(d);
      }
    } catch (IOException e) {
      throw new SnapshotException("snapshot store " + dir + ": cannot write: " + e, e);
    }
  }

  private static void writeFully(FileChannel ch, byte[] bytes) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(bytes);
    while (b.hasRemaining()) {
      ch.write(b);
    }
  }

  private static void fsyncDir(Path d) throws IOException {
    try (FileChannel ch = FileChannel.open(d, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }

  private static void createPrivateDir(Path d) throws IOException {
    if (!Files.isDirectory(d)) {
      Files.createDirectories(
          d, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }
  }

  private static void requireAddress(String address, String field) {
    if (address == null || !HEX64.matcher(address).matches()) {
      throw new SnapshotException.Malformed(
          field + ": \"" + address + "\" is not 64 lowercase hex (a BLAKE3-256 address)");
    }
  }

  /** All blob addresses held (for audits and tests). */
  List<String> held() throws IOException {
    List<String> out = new ArrayList<>();
    try (DirectoryStream<Path> fans = Files.newDirectoryStream(blobs)) {
      for (Path fan : fans) {
        if (Files.isDirectory(fan)) {
          try (DirectoryStream<Path> fs = Files.newDirectoryStream(fan)) {
            for (Path f : fs) {
              out.add(f.getFileName().toString());
            }
          }
        }
      }
    }
    return out;
  }
}
