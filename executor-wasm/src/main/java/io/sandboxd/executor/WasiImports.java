package io.sandboxd.executor;

import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.wasi.WasiExitException;
import com.dylibso.chicory.wasi.WasiOptions;
import com.dylibso.chicory.wasi.WasiPreview1;
import com.dylibso.chicory.wasm.WasmModule;
import com.dylibso.chicory.wasm.types.FunctionType;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.PathMode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.NonReadableChannelException;
import java.nio.channels.NonWritableChannelException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The `wasi_snapshot_preview1` namespace (ABI.md): Chicory's WASI preview 1, with every call that
 * touches a capability brokered first. Paths go through {@link WasiPathBroker} (storage grant,
 * containment in the storage root); `clock_time_get` and `random_get` follow host.clock and
 * host.random and are journaled as `clock_now` and `random_u64` with a request naming the WASI
 * call; stdout and stderr go to the run log when host.logging is granted; sockets are refused;
 * `proc_exit` ends the unit with its status.
 */
final class WasiImports implements AutoCloseable {
  static final String NAMESPACE = "wasi_snapshot_preview1";

  // WASI preview 1 flag bits (witx), for deciding the modes of path_open.
  private static final int LOOKUP_SYMLINK_FOLLOW = 1;
  private static final int O_CREAT = 1;
  private static final int O_DIRECTORY = 2;
  private static final int O_TRUNC = 8;
  private static final int FDFLAG_APPEND = 1;
  private static final long RIGHT_FD_READ = 1L << 1;
  private static final long RIGHT_FD_WRITE = 1L << 6;
  private static final long RIGHT_FD_READDIR = 1L << 14;
  private static final int CLOCK_REALTIME = 0;
  private static final int CLOCK_MONOTONIC = 1;
  private static final int FILESTAT_BYTES = 64;
  private static final int DIRENT_HEADER_BYTES = 24;

  private static final Map<String, FunctionType> SIGNATURES = chicorySignatures();

  private final RunContext ctx;
  private final WasiPreview1 wasi;
  private final WasiPathBroker broker;
  private final GuestLogStream stdout;
  private final GuestLogStream stderr;

  private WasiImports(
      RunContext ctx, List<String> args, Map<String, String> env, WasiPathBroker broker) {
    this.ctx = ctx;
    this.broker = broker;
    this.stdout = new GuestLogStream(ctx);
    this.stderr = new GuestLogStream(ctx);
    WasiOptions.Builder opts =
        WasiOptions.builder()
            .withStdin(InputStream.nullInputStream())
            .withStdout(stdout)
            .withStderr(stderr)
            .withArguments(args);
    // Sorted, so the guest sees the same environment in the same order on every node and replay.
    new TreeMap<>(env).forEach(opts::withEnvironment);
    if (broker != null && !ctx.replaying()) {
      // Preopened as "/": wasi-libc then maps "/x", "x" and "./x" alike beneath the root. A replay
      // preopens nothing: every descriptor call is answered from the journal, never from the disk.
      opts.withDirectory("/", broker.root());
    }
    this.wasi = WasiPreview1.builder().withOptions(opts.build()).build();
  }

  /**
   * The WASI imports of one run, or null when the module imports nothing from this namespace.
   * {@code storageRoot} is preopened as "/" when present; {@code name} is argv[0].
   */
  static WasiImports forRun(
      WasmModule module,
      RunContext ctx,
      String name,
      Map<String, String> env,
      Optional<StorageRoot> storageRoot) {
    if (!imports(module)) {
      return null;
    }
    WasiPathBroker broker =
        storageRoot
            .map(root -> new WasiPathBroker(ctx.enforcer, root.root(), root.ledger()))
            .orElse(null);
    return new WasiImports(ctx, List.of(name), env, broker);
  }

  /** True when {@code module} imports anything from `wasi_snapshot_preview1`. */
  static boolean imports(WasmModule module) {
    var section = module.importSection();
    for (int i = 0; i < section.importCount(); i++) {
      if (section.getImport(i).module().equals(NAMESPACE)) {
        return true;
      }
    }
    return false;
  }

  /** The signature of a WASI function Chicory implements, or null. */
  static FunctionType signature(String name) {
    return SIGNATURES.get(name);
  }

  static String names() {
    return String.join(", ", new TreeMap<>(SIGNATURES).keySet());
  }

  private static Map<String, FunctionType> chicorySignatures() {
    Map<String, FunctionType> out = new HashMap<>();
    try (WasiPreview1 probe = WasiPreview1.builder().build()) {
      for (HostFunction f : probe.toHostFunctions()) {
        out.put(f.name(), f.functionType());
      }
    }
    return Collections.unmodifiableMap(out);
  }

  private interface Call {
    int apply(Instance inst, long[] args);
  }

  /** Every WASI function: Chicory's, with the brokered ones replaced. */
  HostFunction[] functions() {
    Map<String, Call> brokered = brokeredCalls();
    List<HostFunction> out = new ArrayList<>();
    for (HostFunction f : wasi.toHostFunctions()) {
      if (f.name().equals("proc_exit")) {
        out.add(
            new HostFunction(
                NAMESPACE,
                f.name(),
                f.functionType(),
                (inst, args) -> {
                  ctx.countCall();
                  // The guest asked to end: its status becomes the unit's exit code.
                  throw new WasiExitException((int) args[0]);
                }));
        continue;
      }
      Call c = brokered.get(f.name());
      if (broker != null && touchesStorage(f.name())) {
        Call live = c != null ? c : chicory(f);
        out.add(
            new HostFunction(
                NAMESPACE,
                f.name(),
                f.functionType(),
                (inst, args) -> new long[] {journaledFs(f.name(), live, inst, args)}));
      } else if (c != null) {
        // clock and random count themselves through the journal.
        Call cc = JOURNALED_ALWAYS.contains(f.name()) ? c : counted(c);
        out.add(
            new HostFunction(
                NAMESPACE,
                f.name(),
                f.functionType(),
                (inst, args) -> new long[] {cc.apply(inst, args)}));
      } else {
        out.add(new HostFunction(NAMESPACE, f.name(), f.functionType(), guarded(f)));
      }
    }
    return out.toArray(new HostFunction[0]);
  }

  /** Chicory's own function, counted, with channel-mode misuse answered as an errno. */
  private com.dylibso.chicory.runtime.WasmFunctionHandle guarded(HostFunction f) {
    var handle = f.handle();
    boolean returnsValue = !f.functionType().returns().isEmpty();
    return (inst, args) -> {
      ctx.countCall();
      try {
        return handle.apply(inst, args);
      } catch (NonReadableChannelException | NonWritableChannelException e) {
        // e.g. ftruncate on a descriptor opened read-only: the rights were decided at open.
        return returnsValue ? new long[] {Errno.NOTCAPABLE} : null;
      }
    };
  }

  /** Chicory's own function as a {@link Call}, channel-mode misuse answered as an errno. */
  private static Call chicory(HostFunction f) {
    var handle = f.handle();
    return (inst, args) -> {
      try {
        long[] r = handle.apply(inst, args);
        return r == null || r.length == 0 ? Errno.SUCCESS : (int) r[0];
      } catch (NonReadableChannelException | NonWritableChannelException e) {
        return Errno.NOTCAPABLE;
      }
    };
  }

  private Map<String, Call> brokeredCalls() {
    Map<String, Call> m = new HashMap<>();
    m.put("clock_time_get", this::clockTimeGet);
    m.put("random_get", this::randomGet);
    m.put("path_open", this::pathOpen);
    m.put("path_create_directory", this::pathCreateDirectory);
    m.put("path_filestat_get", this::pathFilestatGet);
    m.put("path_filestat_set_times", this::pathFilestatSetTimes);
    m.put("path_link", this::pathLink);
    m.put("path_readlink", this::pathReadlink);
    m.put("path_remove_directory", this::pathRemoveDirectory);
    m.put("path_rename", this::pathRename);
    m.put("path_symlink", this::pathSymlink);
    m.put("path_unlink_file", this::pathUnlinkFile);
    m.put("fd_readdir", this::fdReaddir);
    m.put("fd_filestat_get", this::fdFilestatGet);
    m.put("fd_close", this::fdClose);
    m.put("fd_renumber", this::fdRenumber);
    m.put("fd_write", this::fdWrite);
    m.put("fd_pwrite", this::fdPwrite);
    m.put("fd_allocate", this::fdAllocate);
    m.put("fd_filestat_set_size", this::fdFilestatSetSize);
    m.put("fd_filestat_set_times", this::fdFilestatSetTimes);
    // Chicory traps on this one; a guest gets an errno instead.
    m.put("fd_fdstat_set_rights", (inst, a) -> Errno.NOTSUP);
    // No socket is ever handed to a unit: the network is the `sandbox.egress` import's business.
    for (String s : List.of("sock_accept", "sock_recv", "sock_send", "sock_shutdown")) {
      m.put(s, (inst, a) -> Errno.NOTSUP);
    }
    return m;
  }

  private Call counted(Call c) {
    return (inst, args) -> {
      ctx.countCall();
      return c.apply(inst, args);
    };
  }

  // ---- clock and random: the host grant decides, the journal records what the guest saw ----

  private int clockTimeGet(Instance inst, long[] a) {
    int id = (int) a[0];
    long ptr = a[2];
    if (id != CLOCK_REALTIME && id != CLOCK_MONOTONIC) {
      ctx.countCall();
      // CPU-time clocks would measure the host, not the guest's business.
      return id == 2 || id == 3 ? Errno.NOTSUP : Errno.INVAL;
    }
    GuestMemory mem = new GuestMemory(inst.memory());
    if (!mem.inBounds(ptr, 8)) {
      ctx.countCall();
      return Errno.FAULT;
    }
    ObjectNode request =
        CanonicalJson.mapper().createObjectNode().put("wasi", "clock_time_get").put("clock_id", id);
    HostAnswer ans =
        ctx.clock.read(
            ctx,
            request,
            Errno.SUCCESS,
            () -> id == CLOCK_REALTIME ? ctx.clock.wallNanos() : System.nanoTime());
    if (ans.status() == Errno.SUCCESS) {
      mem.write(ptr, ans.payload());
    }
    return ans.status();
  }

  private int randomGet(Instance inst, long[] a) {
    long ptr = a[0];
    long len = a[1] & 0xffffffffL;
    GuestMemory mem = new GuestMemory(inst.memory());
    if (!mem.inBounds(ptr, len)) {
      ctx.countCall();
      return Errno.FAULT;
    }
    ObjectNode request =
        CanonicalJson.mapper().createObjectNode().put("wasi", "random_get").put("len", len);
    HostAnswer ans =
        ctx.journaledIfAllowed(
            ctx.random.grant(),
            d -> HostAnswer.refused(d.name(), Errno.ACCES),
            "random_u64",
            request,
            () -> HostAnswer.allow(ctx.random.bytes((int) len)),
            null);
    if (ans.status() == Errno.SUCCESS) {
      mem.write(ptr, ans.payload());
    }
    return ans.status();
  }

  // ---- paths: decided by the broker, then Chicory acts on the resolved path, never following ----

  private int pathOpen(Instance inst, long[] a) {
    int lookup = (int) a[1];
    int oflags = (int) a[4];
    long rights = a[5];
    int fdflags = (int) a[7];
    long fdPtr = a[8];
    GuestMemory mem = new GuestMemory(inst.memory());
    String raw = string(mem, a[2], a[3]);
    if (raw == null) {
      return stringErrno(mem, a[2], a[3]);
    }
    if (!mem.inBounds(fdPtr, 4)) {
      return Errno.FAULT;
    }
    boolean write =
        (rights & RIGHT_FD_WRITE) != 0
            || (oflags & (O_CREAT | O_TRUNC)) != 0
            || (fdflags & FDFLAG_APPEND) != 0;
    boolean read =
        (rights & (RIGHT_FD_READ | RIGHT_FD_READDIR)) != 0 || (oflags & O_DIRECTORY) != 0 || !write;
    PathMode[] modes =
        read && write
            ? new PathMode[] {PathMode.READ, PathMode.WRITE}
            : write ? new PathMode[] {PathMode.WRITE} : new PathMode[] {PathMode.READ};
    WasiPathBroker.Brokered b = resolve((int) a[0], raw, follows(lookup), modes);
    if (!b.ok()) {
      return b.errno();
    }
    boolean exists = Files.exists(b.host(), LinkOption.NOFOLLOW_LINKS);
    if (b.dirOnly() && !exists) {
      // "new/" with O_CREAT would make a file under a directory's name.
      return (oflags & O_CREAT) != 0 ? Errno.ISDIR : Errno.NOENT;
    }
    if (StorageRoot.multiplyLinked(b.host())) {
      // Another name of these bytes may be one the grant keeps read-only or hidden.
      return Errno.PERM;
    }
    StorageLedger ledger = broker.ledger();
    long before = exists ? StorageRoot.cost(b.host()) : 0;
    long reserve = exists ? 0 : StorageLedger.ENTRY_BYTES;
    if ((oflags & O_CREAT) != 0 && !ledger.reserve(reserve)) {
      return Errno.DQUOT;
    }
    if ((oflags & O_CREAT) == 0) {
      reserve = 0;
    }
    int errno;
    try {
      errno =
          wasi.pathOpen(
              inst.memory(),
              WasiPathBroker.ROOT_FD,
              lookup & ~LOOKUP_SYMLINK_FOLLOW,
              b.forChicory(),
              oflags,
              rights,
              a[6],
              fdflags,
              (int) fdPtr);
    } finally {
      ledger.settle(StorageRoot.cost(b.host()) - before - reserve);
    }
    if (errno == Errno.SUCCESS) {
      int fd = inst.memory().readInt((int) fdPtr);
      if (StorageRoot.multiplyLinked(b.host())) {
        // Linked between the check and the open (by another process): do not hand it out.
        wasi.fdClose(fd);
        return Errno.PERM;
      }
      broker.opened(
          fd,
          new WasiPathBroker.Opened(
              b.rel(),
              Files.isDirectory(b.host(), LinkOption.NOFOLLOW_LINKS),
              write,
              (fdflags & FDFLAG_APPEND) != 0));
    }
    return errno;
  }

  private int pathCreateDirectory(Instance inst, long[] a) {
    return onePath(
        inst,
        (int) a[0],
        a[1],
        a[2],
        false,
        b -> {
          StorageLedger ledger = broker.ledger();
          if (!ledger.reserve(StorageLedger.ENTRY_BYTES)) {
            return Errno.DQUOT;
          }
          int errno = wasi.pathCreateDirectory(WasiPathBroker.ROOT_FD, b.forChicory());
          if (errno != Errno.SUCCESS) {
            ledger.settle(-StorageLedger.ENTRY_BYTES);
          }
          return errno;
        },
        PathMode.WRITE);
  }

  private int pathFilestatGet(Instance inst, long[] a) {
    int lookup = (int) a[1];
    long buf = a[4];
    if (!new GuestMemory(inst.memory()).inBounds(buf, FILESTAT_BYTES)) {
      return Errno.FAULT;
    }
    int errno =
        onePath(
            inst,
            (int) a[0],
            a[2],
            a[3],
            follows(lookup),
            b ->
                wasi.pathFilestatGet(
                    inst.memory(),
                    WasiPathBroker.ROOT_FD,
                    lookup & ~LOOKUP_SYMLINK_FOLLOW,
                    b.forChicory(),
                    (int) buf),
            PathMode.READ);
    if (errno == Errno.SUCCESS) {
      normalizeTimes(inst.memory(), buf);
    }
    return errno;
  }

  private int pathFilestatSetTimes(Instance inst, long[] a) {
    int lookup = (int) a[1];
    return onePath(
        inst,
        (int) a[0],
        a[2],
        a[3],
        follows(lookup),
        b ->
            StorageRoot.multiplyLinked(b.host())
                ? Errno.PERM
                : wasi.pathFilestatSetTimes(
                    WasiPathBroker.ROOT_FD,
                    lookup & ~LOOKUP_SYMLINK_FOLLOW,
                    b.forChicory(),
                    a[4],
                    a[5],
                    (int) a[6]),
        PathMode.WRITE);
  }

  /**
   * Hard links are refused outright: a second name for the same bytes would let a grant's write
   * globs reach bytes its read-only (or hidden) globs cover, in this run or a later one.
   */
  private int pathLink(Instance inst, long[] a) {
    return broker == null ? Errno.BADF : Errno.PERM;
  }

  private int pathReadlink(Instance inst, long[] a) {
    GuestMemory mem = new GuestMemory(inst.memory());
    long buf = a[3];
    long bufLen = a[4];
    long usedPtr = a[5];
    if (!mem.inBounds(buf, bufLen) || !mem.inBounds(usedPtr, 4)) {
      return Errno.FAULT;
    }
    return onePath(
        inst,
        (int) a[0],
        a[1],
        a[2],
        false,
        b ->
            wasi.pathReadlink(
                inst.memory(),
                WasiPathBroker.ROOT_FD,
                b.forChicory(),
                (int) buf,
                (int) bufLen,
                (int) usedPtr),
        PathMode.READ);
  }

  private int pathRemoveDirectory(Instance inst, long[] a) {
    return onePath(
        inst,
        (int) a[0],
        a[1],
        a[2],
        false,
        b -> {
          int errno = wasi.pathRemoveDirectory(WasiPathBroker.ROOT_FD, b.forChicory());
          if (errno == Errno.SUCCESS) {
            broker.ledger().settle(-StorageLedger.ENTRY_BYTES);
          }
          return errno;
        },
        PathMode.DELETE);
  }

  private int pathUnlinkFile(Instance inst, long[] a) {
    return onePath(
        inst,
        (int) a[0],
        a[1],
        a[2],
        false,
        b -> {
          long cost = StorageRoot.cost(b.host());
          int errno = wasi.pathUnlinkFile(WasiPathBroker.ROOT_FD, b.forChicory());
          if (errno == Errno.SUCCESS) {
            broker.ledger().settle(-cost);
          }
          return errno;
        },
        PathMode.DELETE);
  }

  private int pathRename(Instance inst, long[] a) {
    GuestMemory mem = new GuestMemory(inst.memory());
    String oldRaw = string(mem, a[1], a[2]);
    String newRaw = string(mem, a[4], a[5]);
    if (oldRaw == null || newRaw == null) {
      return oldRaw == null ? stringErrno(mem, a[1], a[2]) : stringErrno(mem, a[4], a[5]);
    }
    // Moving bytes changes them under both names: the old name must be readable, writable and
    // deletable, the new one writable (and deletable when something is there to be replaced), so a
    // rename can never make readable or writable what was not.
    WasiPathBroker.Brokered from =
        resolve((int) a[0], oldRaw, false, PathMode.READ, PathMode.WRITE, PathMode.DELETE);
    if (!from.ok()) {
      return from.errno();
    }
    WasiPathBroker.Brokered to = resolve((int) a[3], newRaw, false, PathMode.WRITE);
    if (!to.ok()) {
      return to.errno();
    }
    boolean replaces = Files.exists(to.host(), LinkOption.NOFOLLOW_LINKS);
    if (replaces && broker.decide(to.rel(), PathMode.DELETE) != Errno.SUCCESS) {
      return Errno.ACCES;
    }
    if (from.rel().isEmpty() || to.rel().isEmpty()) {
      return Errno.ACCES;
    }
    if ((from.dirOnly() || to.dirOnly())
        && !Files.isDirectory(from.host(), LinkOption.NOFOLLOW_LINKS)) {
      return Errno.NOTDIR;
    }
    if (StorageRoot.multiplyLinked(from.host())
        || (replaces && StorageRoot.multiplyLinked(to.host()))) {
      return Errno.PERM;
    }
    int beneath = renameBeneath(from, to);
    if (beneath != Errno.SUCCESS) {
      return beneath;
    }
    long replaced = replaces ? StorageRoot.cost(to.host()) : 0;
    int errno =
        wasi.pathRename(
            WasiPathBroker.ROOT_FD, from.forChicory(), WasiPathBroker.ROOT_FD, to.forChicory());
    if (errno == Errno.SUCCESS) {
      broker.ledger().settle(-replaced);
    }
    return errno;
  }

  /** A directory moves everything beneath it: each entry is decided as if renamed alone. */
  private int renameBeneath(WasiPathBroker.Brokered from, WasiPathBroker.Brokered to) {
    if (from.rel().isEmpty() || !Files.isDirectory(from.host(), LinkOption.NOFOLLOW_LINKS)) {
      return Errno.SUCCESS;
    }
    try (Stream<Path> walk = Files.walk(from.host())) {
      for (Path p : (Iterable<Path>) walk::iterator) {
        String tail = from.host().relativize(p).toString();
        if (tail.isEmpty()) {
          continue;
        }
        String oldRel = from.rel() + "/" + tail;
        String newRel = to.rel().isEmpty() ? tail : to.rel() + "/" + tail;
        if (broker.decide(oldRel, PathMode.READ, PathMode.WRITE, PathMode.DELETE) != Errno.SUCCESS
            || broker.decide(newRel, PathMode.WRITE) != Errno.SUCCESS) {
          return Errno.ACCES;
        }
        if (StorageRoot.multiplyLinked(p)) {
          return Errno.PERM;
        }
      }
    } catch (IOException | java.io.UncheckedIOException e) {
      return Errno.IO;
    }
    return Errno.SUCCESS;
  }

  /**
   * Symlinks are refused: a link is a path the grant never decided, and a later run (or an exec'd
   * program) could follow it from a writable name into a read-only one.
   */
  private int pathSymlink(Instance inst, long[] a) {
    return broker == null ? Errno.BADF : Errno.PERM;
  }

  private interface Act {
    int on(WasiPathBroker.Brokered b);
  }

  private int onePath(
      Instance inst, int dirFd, long ptr, long len, boolean follow, Act act, PathMode... modes) {
    GuestMemory mem = new GuestMemory(inst.memory());
    String raw = string(mem, ptr, len);
    if (raw == null) {
      return stringErrno(mem, ptr, len);
    }
    WasiPathBroker.Brokered b = resolve(dirFd, raw, follow, modes);
    return b.ok() ? act.on(b) : b.errno();
  }

  private WasiPathBroker.Brokered resolve(
      int dirFd, String raw, boolean follow, PathMode... modes) {
    if (broker == null) {
      return WasiPathBroker.Brokered.refused(Errno.BADF);
    }
    return broker.resolve(dirFd, raw, follow, modes);
  }

  private static boolean follows(int lookup) {
    return (lookup & LOOKUP_SYMLINK_FOLLOW) != 0;
  }

  // ---- descriptors: listings filtered by the grant, the root descriptor kept in place ----

  private int fdReaddir(Instance inst, long[] a) {
    int fd = (int) a[0];
    long buf = a[1];
    long bufLen = a[2] & 0xffffffffL;
    long cookie = a[3];
    long usedPtr = a[4];
    GuestMemory mem = new GuestMemory(inst.memory());
    if (!mem.inBounds(buf, bufLen) || !mem.inBounds(usedPtr, 4)) {
      return Errno.FAULT;
    }
    if (cookie < 0) {
      return Errno.INVAL;
    }
    WasiPathBroker.Opened dir = broker == null ? null : broker.opened(fd);
    if (dir == null) {
      return Errno.BADF;
    }
    if (!dir.directory()) {
      return Errno.NOTDIR;
    }
    List<WasiPathBroker.Entry> entries;
    try {
      entries = broker.listing(dir);
    } catch (IOException | java.io.UncheckedIOException e) {
      return Errno.IO;
    }
    long used = 0;
    for (long i = cookie; i < entries.size() && used < bufLen; i++) {
      WasiPathBroker.Entry e = entries.get((int) i);
      byte[] name = e.name().getBytes(StandardCharsets.UTF_8);
      ByteBuffer d =
          ByteBuffer.allocate(DIRENT_HEADER_BYTES + name.length).order(ByteOrder.LITTLE_ENDIAN);
      d.putLong(i + 1).putLong(e.ino()).putInt(name.length).put(e.type());
      d.position(DIRENT_HEADER_BYTES);
      d.put(name);
      // A last entry that does not fit is cut: buf_used == buf_len tells libc to ask again.
      int n = (int) Math.min(d.capacity(), bufLen - used);
      inst.memory().write((int) (buf + used), d.array(), 0, n);
      used += n;
    }
    inst.memory().writeI32((int) usedPtr, (int) used);
    return Errno.SUCCESS;
  }

  private int fdFilestatGet(Instance inst, long[] a) {
    long buf = a[1];
    if (!new GuestMemory(inst.memory()).inBounds(buf, FILESTAT_BYTES)) {
      return Errno.FAULT;
    }
    int errno = wasi.fdFilestatGet(inst.memory(), (int) a[0], (int) buf);
    if (errno == Errno.SUCCESS) {
      normalizeTimes(inst.memory(), buf);
    }
    return errno;
  }

  /**
   * File times are the wall clock by another name: without host.clock they read as the constant.
   */
  private void normalizeTimes(Memory memory, long buf) {
    for (int off = 40; off <= 56; off += 8) {
      memory.writeLong((int) buf + off, ctx.clock.shown(memory.readLong((int) buf + off)));
    }
  }

  private int fdClose(Instance inst, long[] a) {
    int fd = (int) a[0];
    if (fd <= WasiPathBroker.ROOT_FD && fd >= 0) {
      // Every brokered path is acted on through the root descriptor, and stdio stays stdio (so
      // which calls are journaled never depends on what the guest closed): they stay open.
      return Errno.NOTSUP;
    }
    int errno = wasi.fdClose(fd);
    if (errno == Errno.SUCCESS && broker != null) {
      broker.closed(fd);
    }
    return errno;
  }

  private int fdRenumber(Instance inst, long[] a) {
    int from = (int) a[0];
    int to = (int) a[1];
    if (isReserved(from) || isReserved(to)) {
      return Errno.NOTSUP;
    }
    int errno = wasi.fdRenumber(from, to);
    if (errno == Errno.SUCCESS && broker != null && from != to) {
      broker.renumbered(from, to);
    }
    return errno;
  }

  private static boolean isReserved(int fd) {
    return fd >= 0 && fd <= WasiPathBroker.ROOT_FD;
  }

  // ---- writes through descriptors: bounded by the module's storage quota ----

  private int fdWrite(Instance inst, long[] a) {
    int fd = (int) a[0];
    return grown(
        inst,
        fd,
        (o, size) -> {
          long len = iovecBytes(new GuestMemory(inst.memory()), a[1], a[2]);
          return len < 0 ? -1 : saturatingAdd(o.append() ? size : position(inst, fd), len);
        },
        () -> wasi.fdWrite(inst.memory(), fd, (int) a[1], (int) a[2], (int) a[3]));
  }

  private int fdPwrite(Instance inst, long[] a) {
    int fd = (int) a[0];
    return grown(
        inst,
        fd,
        (o, size) -> {
          long len = iovecBytes(new GuestMemory(inst.memory()), a[1], a[2]);
          return len < 0 || a[3] < 0 ? -1 : saturatingAdd(a[3], len);
        },
        () -> wasi.fdPwrite(inst.memory(), fd, (int) a[1], (int) a[2], a[3], (int) a[4]));
  }

  private int fdAllocate(Instance inst, long[] a) {
    int fd = (int) a[0];
    return grown(
        inst,
        fd,
        (o, size) -> a[1] < 0 || a[2] < 0 ? -1 : saturatingAdd(a[1], a[2]),
        () -> wasi.fdAllocate(fd, a[1], a[2]));
  }

  private int fdFilestatSetSize(Instance inst, long[] a) {
    int fd = (int) a[0];
    return grown(
        inst, fd, (o, size) -> a[1] < 0 ? -1 : a[1], () -> wasi.fdFilestatSetSize(fd, a[1]));
  }

  private int fdFilestatSetTimes(Instance inst, long[] a) {
    int fd = (int) a[0];
    return grown(
        inst, fd, (o, size) -> 0, () -> wasi.fdFilestatSetTimes(fd, a[1], a[2], (int) a[3]));
  }

  /** Where a write through a descriptor would end, from its open state and the file's size. */
  private interface End {
    long of(WasiPathBroker.Opened o, long size);
  }

  private interface Act0 {
    int run();
  }

  /**
   * A change through a storage descriptor: only through one opened for writing, never to a file
   * that has gained a second name, and only when the growth it may cause (holes included: a write
   * at 2^40 would otherwise make a 1 TiB sparse file) fits the module's quota; the ledger is then
   * settled to the size the disk shows. Stdio and unknown descriptors go to Chicory unchanged.
   */
  private int grown(Instance inst, int fd, End end, Act0 act) {
    WasiPathBroker.Opened o = broker == null ? null : broker.opened(fd);
    if (o == null || o.directory() || fd == WasiPathBroker.ROOT_FD) {
      return act.run();
    }
    if (!o.writable()) {
      return Errno.NOTCAPABLE;
    }
    Path host = broker.root().resolve(o.rel());
    if (StorageRoot.multiplyLinked(host)) {
      return Errno.PERM;
    }
    long size = StorageRoot.size(host);
    long newEnd = end.of(o, size);
    if (newEnd < 0) {
      return Errno.INVAL;
    }
    long growth = Math.max(0, newEnd - size);
    StorageLedger ledger = broker.ledger();
    if (!ledger.reserve(growth)) {
      return Errno.DQUOT;
    }
    try {
      return act.run();
    } finally {
      ledger.settle(StorageRoot.size(host) - size - growth);
    }
  }

  private static long saturatingAdd(long x, long y) {
    long r = x + y;
    return ((x ^ r) & (y ^ r)) < 0 ? Long.MAX_VALUE : r;
  }

  /** The descriptor's current offset, read through a scratch word that is put back after. */
  private long position(Instance inst, int fd) {
    GuestMemory mem = new GuestMemory(inst.memory());
    if (!mem.inBounds(0, 8)) {
      return Long.MAX_VALUE;
    }
    byte[] saved = mem.read(0, 8);
    try {
      int errno = wasi.fdTell(inst.memory(), fd, 0);
      return errno == Errno.SUCCESS ? inst.memory().readLong(0) : Long.MAX_VALUE;
    } finally {
      mem.write(0, saved);
    }
  }

  /** The total length of an iovec array, or -1 when it lies outside memory. */
  private static long iovecBytes(GuestMemory mem, long iovs, long count) {
    long n = count & 0xffffffffL;
    if (!mem.inBounds(iovs, n * 8)) {
      return -1;
    }
    long total = 0;
    for (long i = 0; i < n; i++) {
      byte[] iov = mem.read(iovs + i * 8, 8);
      ByteBuffer b = ByteBuffer.wrap(iov).order(ByteOrder.LITTLE_ENDIAN);
      long ptr = b.getInt() & 0xffffffffL;
      long len = b.getInt() & 0xffffffffL;
      if (!mem.inBounds(ptr, len)) {
        return -1;
      }
      total += len;
    }
    return total;
  }

  // ---- the journal: every storage input a guest sees, and every storage change's answer ----

  private static final java.util.Set<String> JOURNALED_ALWAYS =
      java.util.Set.of("clock_time_get", "random_get");

  private static final java.util.Set<String> DELETES =
      java.util.Set.of("path_unlink_file", "path_remove_directory");

  private static final java.util.Set<String> WRITES =
      java.util.Set.of(
          "fd_write",
          "fd_pwrite",
          "fd_allocate",
          "fd_filestat_set_size",
          "fd_filestat_set_times",
          "path_create_directory",
          "path_filestat_set_times",
          "path_link",
          "path_symlink",
          "path_rename");

  /** Where each path-taking call keeps its (ptr, len) string arguments. */
  private static final Map<String, int[]> PATH_ARGS =
      Map.of(
          "path_create_directory", new int[] {1, 2},
          "path_filestat_get", new int[] {2, 3},
          "path_filestat_set_times", new int[] {2, 3},
          "path_link", new int[] {2, 3, 5, 6},
          "path_open", new int[] {2, 3},
          "path_readlink", new int[] {1, 2},
          "path_remove_directory", new int[] {1, 2},
          "path_rename", new int[] {1, 2, 4, 5},
          "path_symlink", new int[] {0, 1, 3, 4},
          "path_unlink_file", new int[] {1, 2});

  /** Calls that reach the storage through a descriptor or a path (and poll, which reads them). */
  static boolean touchesStorage(String name) {
    return name.startsWith("fd_") || name.startsWith("path_") || name.equals("poll_oneoff");
  }

  /**
   * A storage-touching WASI call, journaled: live, the call acts and what it handed the guest (its
   * errno and every byte it wrote into guest memory) is recorded; in a replay that record is
   * written back and the disk is never touched. Writes are journaled too (with a hash of the bytes
   * written), so a replay answers them as recorded and notices a guest that writes differently.
   * Stdio descriptors (0, 1, 2) stay live: they are the run log and an empty stdin.
   */
  private int journaledFs(String name, Call live, Instance inst, long[] args) {
    if (name.startsWith("fd_") && args[0] >= 0 && args[0] < WasiPathBroker.ROOT_FD) {
      ctx.countCall();
      return live.apply(inst, args);
    }
    GuestMemory mem = new GuestMemory(inst.memory());
    ObjectNode request = fsRequest(name, mem, args);
    String call =
        DELETES.contains(name)
            ? "storage_delete"
            : WRITES.contains(name) ? "storage_write" : "storage_read";
    HostAnswer ans =
        ctx.journaled(
            call,
            request,
            () -> {
              int errno;
              try {
                errno = live.apply(inst, args);
              } catch (com.dylibso.chicory.runtime.ChicoryInterruptedException e) {
                throw e;
              } catch (com.dylibso.chicory.wasm.ChicoryException e) {
                // A guest pointer outside memory: an errno the replay can give back too.
                errno = Errno.FAULT;
              }
              byte[] writes = errno == Errno.SUCCESS ? captured(name, mem, args) : new byte[0];
              String decision =
                  errno == Errno.ACCES || errno == Errno.NOTCAPABLE ? "Denied" : "Allow";
              return new HostAnswer(decision, errno, writes);
            });
    if (ctx.replaying() && !writeBack(mem, ans.payload())) {
      return Errno.FAULT;
    }
    return ans.status();
  }

  /** The request of a journaled storage call: its name, its arguments, its paths and data. */
  private static ObjectNode fsRequest(String name, GuestMemory mem, long[] args) {
    ObjectNode r = CanonicalJson.mapper().createObjectNode().put("wasi", name);
    com.fasterxml.jackson.databind.node.ArrayNode a = r.putArray("args");
    for (long v : args) {
      a.add(v);
    }
    int[] paths = PATH_ARGS.get(name);
    if (paths != null) {
      com.fasterxml.jackson.databind.node.ArrayNode p = r.putArray("paths");
      for (int i = 0; i < paths.length; i += 2) {
        byte[] raw = mem.readChecked(args[paths[i]], args[paths[i + 1]]);
        p.add(raw == null ? "fault" : io.sandboxd.attest.Blake3.hex(raw));
      }
    }
    if (name.equals("fd_write") || name.equals("fd_pwrite")) {
      com.fasterxml.jackson.databind.node.ArrayNode d = r.putArray("data");
      if (iovecBytes(mem, args[1], args[2]) < 0) {
        d.add("fault");
      } else {
        for (long i = 0; i < (args[2] & 0xffffffffL); i++) {
          ByteBuffer b =
              ByteBuffer.wrap(mem.read(args[1] + i * 8, 8)).order(ByteOrder.LITTLE_ENDIAN);
          long ptr = b.getInt() & 0xffffffffL;
          long len = b.getInt() & 0xffffffffL;
          d.add(io.sandboxd.attest.Blake3.hex(mem.read(ptr, len)));
        }
      }
    }
    return r;
  }

  /**
   * What a successful call wrote into guest memory, as {@code (ptr u32, len u32, bytes)} runs: only
   * the bytes it filled (a read's {@code nread}, a listing's {@code used}), not whole buffers.
   */
  private static byte[] captured(String name, GuestMemory mem, long[] a) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    switch (name) {
      case "fd_read", "fd_pread" -> {
        long nreadPtr = name.equals("fd_read") ? a[3] : a[4];
        long n = readU32(mem, nreadPtr);
        region(out, mem, nreadPtr, 4);
        long left = n;
        for (long i = 0; left > 0 && i < (a[2] & 0xffffffffL); i++) {
          if (!mem.inBounds(a[1] + i * 8, 8)) {
            break;
          }
          ByteBuffer b = ByteBuffer.wrap(mem.read(a[1] + i * 8, 8)).order(ByteOrder.LITTLE_ENDIAN);
          long ptr = b.getInt() & 0xffffffffL;
          long len = Math.min(b.getInt() & 0xffffffffL, left);
          region(out, mem, ptr, len);
          left -= len;
        }
      }
      case "fd_write" -> region(out, mem, a[3], 4);
      case "fd_pwrite" -> region(out, mem, a[4], 4);
      case "fd_readdir" -> {
        region(out, mem, a[1], readU32(mem, a[4]));
        region(out, mem, a[4], 4);
      }
      case "fd_filestat_get" -> region(out, mem, a[1], FILESTAT_BYTES);
      case "fd_fdstat_get" -> region(out, mem, a[1], FDSTAT_BYTES);
      case "fd_prestat_get" -> region(out, mem, a[1], 8);
      case "fd_prestat_dir_name" -> region(out, mem, a[1], a[2]);
      case "fd_seek" -> region(out, mem, a[3], 8);
      case "fd_tell" -> region(out, mem, a[1], 8);
      case "path_open" -> region(out, mem, a[8], 4);
      case "path_filestat_get" -> region(out, mem, a[4], FILESTAT_BYTES);
      case "path_readlink" -> {
        region(out, mem, a[3], readU32(mem, a[5]));
        region(out, mem, a[5], 4);
      }
      case "poll_oneoff" -> {
        region(out, mem, a[1], readU32(mem, a[3]) * 32);
        region(out, mem, a[3], 4);
      }
      default -> {}
    }
    return out.toByteArray();
  }

  private static final int FDSTAT_BYTES = 24;

  private static long readU32(GuestMemory mem, long ptr) {
    if (!mem.inBounds(ptr, 4)) {
      return 0;
    }
    return ByteBuffer.wrap(mem.read(ptr, 4)).order(ByteOrder.LITTLE_ENDIAN).getInt() & 0xffffffffL;
  }

  private static void region(
      java.io.ByteArrayOutputStream out, GuestMemory mem, long ptr, long len) {
    if (len <= 0 || !mem.inBounds(ptr, len)) {
      return;
    }
    ByteBuffer h = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    h.putInt((int) ptr).putInt((int) len);
    out.writeBytes(h.array());
    out.writeBytes(mem.read(ptr, len));
  }

  /**
   * Writes recorded {@code (ptr, len, bytes)} runs back into guest memory; false when one does not
   * fit.
   */
  private static boolean writeBack(GuestMemory mem, byte[] runs) {
    ByteBuffer b = ByteBuffer.wrap(runs).order(ByteOrder.LITTLE_ENDIAN);
    while (b.remaining() >= 8) {
      long ptr = b.getInt() & 0xffffffffL;
      long len = b.getInt() & 0xffffffffL;
      if (len > b.remaining() || !mem.inBounds(ptr, len)) {
        return false;
      }
      byte[] bytes = new byte[(int) len];
      b.get(bytes);
      mem.write(ptr, bytes);
    }
    return !b.hasRemaining();
  }

  // ---- guest strings ----

  /** The guest's bytes as strict UTF-8, or null (see {@link #stringErrno}). */
  private static String string(GuestMemory mem, long ptr, long len) {
    if (!mem.inBounds(ptr, len)) {
      return null;
    }
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(mem.read(ptr, len)))
          .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  private static int stringErrno(GuestMemory mem, long ptr, long len) {
    return mem.inBounds(ptr, len) ? Errno.ILSEQ : Errno.FAULT;
  }

  private static byte[] le64(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
  }

  /** Flushes a last unterminated line of output and closes every descriptor the guest left open. */
  @Override
  public void close() {
    stdout.flush();
    stderr.flush();
    wasi.close();
  }
}
