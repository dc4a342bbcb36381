package io.sandboxd.executor;

import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.runtime.WasmFunctionHandle;
import com.dylibso.chicory.wasi.WasiOptions;
import com.dylibso.chicory.wasi.WasiPreview1;
import com.dylibso.chicory.wasi.WasiPreview1_ModuleFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.HostService;
import io.sandboxd.enforcer.PathMode;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.ToLongFunction;
import java.util.stream.Stream;

/**
 * The WASI side of one run, attached to an instance when the run binds it ({@link RunBinding}):
 * Chicory's {@link WasiPreview1} made for this run (its descriptors, argv, environment, the stdin
 * it was given, stdout and stderr captured under their caps, the storage root preopened as "/"),
 * the run's {@link WasiPathBroker}, and the bodies of the calls {@link WasiImports} brokers. Paths
 * go through the broker (storage grant, containment in the storage root); `clock_time_get` and
 * `random_get` follow host.clock and host.random and are journaled as `clock_now` and `random_u64`
 * with a request naming the WASI call.
 *
 * <p>Chicory's preview 1 takes its streams, preopens, argv and environment when it is built and
 * cannot be re-pointed, so each run builds its own here, at bind time, and the instance's WASI host
 * functions reach it by name through the binding. What a pre-instantiated instance must not do is
 * run the guest's own WASI start-up (wasi-libc reads argv, environ and preopens once, at start or
 * first use) before its run is bound: instantiate with the start function off, as {@link Executor}
 * does.
 */
final class WasiRun implements AutoCloseable {
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
  static final int FILESTAT_BYTES = 64;
  private static final int DIRENT_HEADER_BYTES = 24;

  private final RunContext ctx;
  private final WasiPreview1 wasi;
  private final WasiPathBroker broker;
  private final OutputCapture stdout;
  private final OutputCapture stderr;
  private final Map<String, WasmFunctionHandle> chicory = new HashMap<>();
  private final WasiReads reads = new WasiReads();

  private WasiRun(
      RunContext ctx,
      List<String> args,
      Map<String, String> env,
      WasiPathBroker broker,
      UnitIo io) {
    this.ctx = ctx;
    this.broker = broker;
    // Output goes to the submitter, as the log does: kept only when host.logging is granted
    // (ABI.md), and counted either way.
    boolean keep = ctx.enforcer.mayHost(HostService.LOGGING).allowed();
    this.stdout = new OutputCapture(io.stdoutMaxBytes(), keep);
    this.stderr = new OutputCapture(io.stderrMaxBytes(), keep);
    // The stdin given ends at EOF: a guest that reads forever reads it once, then 0 bytes.
    InputStream stdin =
        io.stdin()
            .<InputStream>map(ByteArrayInputStream::new)
            .orElse(InputStream.nullInputStream());
    // Not terminals (Chicory's default says they are): a program that believes its stdin is a
    // TTY runs interactively, e.g. the SQLite shell prints prompts and sleeps 50 ms at EOF.
    WasiOptions.Builder opts =
        WasiOptions.builder()
            .withStdin(stdin, false)
            .withStdout(stdout, false)
            .withStderr(stderr, false)
            .withArguments(args);
    // Sorted, so the guest sees the same environment in the same order on every node and replay.
    new TreeMap<>(env).forEach(opts::withEnvironment);
    if (broker != null && !ctx.replaying()) {
      // Preopened as "/": wasi-libc then maps "/x", "x" and "./x" alike beneath the root. A replay
      // preopens nothing: every descriptor call is answered from the journal, never from the disk.
      opts.withDirectory("/", broker.root());
      // An environment's mounts next, as descriptors 4, 5, ...: wasi-libc maps "/data/x" to the
      // longest preopen above it, and the broker joins them all into one namespace.
      for (WasiPathBroker.Preopen m : broker.mounts()) {
        opts.withDirectory("/" + m.rel(), m.root());
      }
    }
    this.wasi = WasiPreview1.builder().withOptions(opts.build()).build();
    for (HostFunction f : WasiPreview1_ModuleFactory.toHostFunctions(wasi)) {
      chicory.put(f.name(), f.handle());
    }
  }

  /**
   * The WASI state of one run, made when the run binds an instance: {@code ctx}'s storage root is
   * preopened as "/" when present; {@code name} is argv[0]; {@code env} the guest's environment.
   */
  static WasiRun open(RunContext ctx, String name, Map<String, String> env) {
    return open(ctx, List.of(name), env, UnitIo.NONE);
  }

  /**
   * As above, with {@code argv} the guest's full argv and {@code io} its stdin and output caps (its
   * args are already resolved into {@code argv}).
   */
  static WasiRun open(RunContext ctx, List<String> argv, Map<String, String> env, UnitIo io) {
    List<WasiPathBroker.Mount> mounts =
        ctx.storage.mounts().stream()
            .map(m -> new WasiPathBroker.Mount(m.rel(), m.root().root(), m.root().ledger()))
            .toList();
    WasiPathBroker broker =
        ctx.storage
            .root()
            .map(root -> new WasiPathBroker(ctx.enforcer, root.root(), root.ledger(), mounts))
            .orElse(null);
    return new WasiRun(ctx, argv, env, broker, io);
  }

  /**
   * What the guest wrote to stdout and stderr. Call after {@link #close()}; a cut or discarded
   * stream is also noted in the run log, so the result says so wherever it is read.
   */
  ExecutionResult.Stdio stdio() {
    return new ExecutionResult.Stdio(stdout.output(), stderr.output());
  }

  private void noteCut(String name, ExecutionResult.Output o) {
    if (!o.kept() && o.written() > 0) {
      ctx.appendLog(
          ("[sandboxd: "
                  + name
                  + " not kept: host.logging is not granted; the unit wrote "
                  + o.written()
                  + " bytes]")
              .getBytes(StandardCharsets.UTF_8));
    } else if (o.truncated()) {
      ctx.appendLog(
          ("[sandboxd: "
                  + name
                  + " truncated at the node's cap of "
                  + o.bytes().length
                  + " bytes; the unit wrote "
                  + o.written()
                  + " bytes]")
              .getBytes(StandardCharsets.UTF_8));
    }
  }

  /** Chicory's own implementation of {@code name}, acting on this run's descriptors. */
  WasmFunctionHandle chicory(String name) {
    WasmFunctionHandle h = chicory.get(name);
    if (h == null) {
      throw new IllegalStateException("Chicory implements no WASI function " + name);
    }
    return h;
  }

  /** Whether the run has a storage root: then every descriptor and path call is journaled. */
  boolean storageBrokered() {
    return broker != null;
  }

  /** What the running call read from storage, for the run's taint. */
  WasiReads reads() {
    return reads;
  }

  /** Notes a read through descriptor {@code fd}: the path it was opened on, if it is storage's. */
  void readThrough(int fd) {
    WasiPathBroker.Opened o = broker == null ? null : broker.opened(fd);
    if (o != null) {
      reads.read(o.rel());
    }
  }

  // ---- clock and random: the host grant decides, the journal records what the guest saw ----

  int clockTimeGet(Memory memory, int clockId, long precision, int resultPtr) {
    int id = clockId;
    long ptr = resultPtr;
    if (id != CLOCK_REALTIME && id != CLOCK_MONOTONIC) {
      // CPU-time clocks would measure the host, not the guest's business.
      return ctx.counted(id == 2 || id == 3 ? Errno.NOTSUP : Errno.INVAL);
    }
    GuestMemory mem = new GuestMemory(memory);
    if (!mem.inBounds(ptr, 8)) {
      return ctx.counted(Errno.FAULT);
    }
    ObjectNode request =
        CanonicalJson.mapper().createObjectNode().put("wasi", "clock_time_get").put("clock_id", id);
    HostAnswer ans =
        ctx.clock.read(
            ctx,
            request,
            Errno.SUCCESS,
            () -> id == CLOCK_REALTIME ? ctx.clock.wallNanos() : System.nanoTime());
    return written(mem, ptr, ans);
  }

  int randomGet(Memory memory, int buf, int bufLen) {
    long ptr = buf;
    long len = bufLen & 0xffffffffL;
    GuestMemory mem = new GuestMemory(memory);
    if (!mem.inBounds(ptr, len)) {
      return ctx.counted(Errno.FAULT);
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
    return written(mem, ptr, ans);
  }

  /** The guest gets the answer's status, and its payload at {@code ptr} when it was allowed. */
  private static int written(GuestMemory mem, long ptr, HostAnswer ans) {
    if (ans.status() == Errno.SUCCESS) {
      mem.write(ptr, ans.payload());
    }
    return ans.status();
  }

  // ---- paths: decided by the broker, then Chicory acts on the resolved path, never following ----

  int pathOpen(
      Memory memory,
      GuestPath path,
      int lookup,
      int oflags,
      long rights,
      long rightsInheriting,
      int fdflags,
      int fdPtr) {
    GuestMemory mem = new GuestMemory(memory);
    String raw = path.text(mem);
    if (raw == null) {
      return path.errno(mem);
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
    WasiPathBroker.Brokered b = resolve(path.dirFd(), raw, follows(lookup), modes);
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
    StorageLedger ledger = b.ledger();
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
              memory,
              b.fd(),
              lookup & ~LOOKUP_SYMLINK_FOLLOW,
              b.forChicory(),
              oflags,
              rights,
              rightsInheriting,
              fdflags,
              (int) fdPtr);
    } finally {
      ledger.settle(StorageRoot.cost(b.host()) - before - reserve);
    }
    if (errno == Errno.SUCCESS) {
      int fd = memory.readInt((int) fdPtr);
      if (StorageRoot.multiplyLinked(b.host())) {
        // Linked between the check and the open (by another process): do not hand it out.
        wasi.fdClose(fd);
        return Errno.PERM;
      }
      if (read) {
        // Opened for reading: the run holds the bytes from here on, under both names it used.
        noteRead(path.dirFd(), raw, b);
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

  int pathCreateDirectory(Memory memory, GuestPath path) {
    return onePath(
        memory,
        path,
        false,
        PathMode.WRITE,
        b -> {
          StorageLedger ledger = b.ledger();
          if (!ledger.reserve(StorageLedger.ENTRY_BYTES)) {
            return Errno.DQUOT;
          }
          int errno = wasi.pathCreateDirectory(b.fd(), b.forChicory());
          if (errno != Errno.SUCCESS) {
            ledger.settle(-StorageLedger.ENTRY_BYTES);
          }
          return errno;
        });
  }

  int pathFilestatGet(Memory memory, GuestPath path, int lookup, int buf) {
    if (!new GuestMemory(memory).inBounds(buf, FILESTAT_BYTES)) {
      return Errno.FAULT;
    }
    int errno =
        onePath(
            memory,
            path,
            follows(lookup),
            PathMode.READ,
            b ->
                wasi.pathFilestatGet(
                    memory, b.fd(), lookup & ~LOOKUP_SYMLINK_FOLLOW, b.forChicory(), (int) buf));
    if (errno == Errno.SUCCESS) {
      normalizeTimes(memory, buf);
    }
    return errno;
  }

  int pathFilestatSetTimes(
      Memory memory, GuestPath path, int lookup, long atim, long mtim, int fstFlags) {
    return onePath(
        memory,
        path,
        follows(lookup),
        PathMode.WRITE,
        b ->
            StorageRoot.multiplyLinked(b.host())
                ? Errno.PERM
                : wasi.pathFilestatSetTimes(
                    b.fd(), lookup & ~LOOKUP_SYMLINK_FOLLOW, b.forChicory(), atim, mtim, fstFlags));
  }

  /**
   * Hard links are refused outright: a second name for the same bytes would let a grant's write
   * globs reach bytes its read-only (or hidden) globs cover, in this run or a later one.
   */
  int pathLink() {
    return broker == null ? Errno.BADF : Errno.PERM;
  }

  int pathReadlink(Memory memory, GuestPath path, int buf, int bufLen, int usedPtr) {
    GuestMemory mem = new GuestMemory(memory);
    if (!mem.inBounds(buf, bufLen) || !mem.inBounds(usedPtr, 4)) {
      return Errno.FAULT;
    }
    return onePath(
        memory,
        path,
        false,
        PathMode.READ,
        b ->
            wasi.pathReadlink(
                memory, b.fd(), b.forChicory(), (int) buf, (int) bufLen, (int) usedPtr));
  }

  int pathRemoveDirectory(Memory memory, GuestPath path) {
    return removed(
        memory,
        path,
        b -> StorageLedger.ENTRY_BYTES,
        b -> wasi.pathRemoveDirectory(b.fd(), b.forChicory()));
  }

  int pathUnlinkFile(Memory memory, GuestPath path) {
    return removed(
        memory,
        path,
        b -> StorageRoot.cost(b.host()),
        b -> wasi.pathUnlinkFile(b.fd(), b.forChicory()));
  }

  /**
   * Removes the entry at a path with {@code remove}, giving the storage ledger back what the entry
   * cost ({@code cost}, read before it is gone) once the removal succeeds.
   */
  private int removed(
      Memory memory, GuestPath path, ToLongFunction<WasiPathBroker.Brokered> cost, Act remove) {
    return onePath(
        memory,
        path,
        false,
        PathMode.DELETE,
        b -> {
          long bytes = cost.applyAsLong(b);
          int errno = remove.on(b);
          if (errno == Errno.SUCCESS) {
            b.ledger().settle(-bytes);
          }
          return errno;
        });
  }

  int pathRename(Memory memory, GuestPath oldPath, GuestPath newPath) {
    GuestMemory mem = new GuestMemory(memory);
    String oldRaw = oldPath.text(mem);
    String newRaw = newPath.text(mem);
    if (oldRaw == null || newRaw == null) {
      return oldRaw == null ? oldPath.errno(mem) : newPath.errno(mem);
    }
    // Moving bytes changes them under both names: the old name must be readable, writable and
    // deletable, the new one writable (and deletable when something is there to be replaced), so a
    // rename can never make readable or writable what was not.
    WasiPathBroker.Brokered from =
        resolve(oldPath.dirFd(), oldRaw, false, PathMode.READ, PathMode.WRITE, PathMode.DELETE);
    if (!from.ok()) {
      return from.errno();
    }
    WasiPathBroker.Brokered to = resolve(newPath.dirFd(), newRaw, false, PathMode.WRITE);
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
    if (from.at() != to.at()) {
      // Another directory on the host (a mount): bytes would leave one quota for another.
      return Errno.XDEV;
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
    int errno = wasi.pathRename(from.fd(), from.forChicory(), to.fd(), to.forChicory());
    if (errno == Errno.SUCCESS) {
      to.ledger().settle(-replaced);
      // Moved bytes keep their origin: reading them back under a trusted name must not launder.
      reads.read(from.rel());
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
  int pathSymlink() {
    return broker == null ? Errno.BADF : Errno.PERM;
  }

  private interface Act {
    int on(WasiPathBroker.Brokered b);
  }

  private int onePath(Memory memory, GuestPath path, boolean follow, PathMode mode, Act act) {
    GuestMemory mem = new GuestMemory(memory);
    String raw = path.text(mem);
    if (raw == null) {
      return path.errno(mem);
    }
    WasiPathBroker.Brokered b = resolve(path.dirFd(), raw, follow, mode);
    if (b.ok() && mode == PathMode.READ) {
      // A stat or readlink hands the guest what lies at the path: a read like any other.
      noteRead(path.dirFd(), raw, b);
    }
    return b.ok() ? act.on(b) : b.errno();
  }

  /** Notes a read of {@code b} and of the name the guest gave it (they differ past a link). */
  private void noteRead(int dirFd, String raw, WasiPathBroker.Brokered b) {
    reads.read(b.rel());
    WasiPathBroker.Brokered named = broker.lexical(dirFd, raw);
    if (named.ok()) {
      reads.read(named.rel());
    }
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

  int fdReaddir(Memory memory, int fd, int buf, int bufLen, long cookie, int usedPtr) {
    long cap = Integer.toUnsignedLong(bufLen);
    GuestMemory mem = new GuestMemory(memory);
    if (!mem.inBounds(buf, cap) || !mem.inBounds(usedPtr, 4)) {
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
    reads.read(dir.rel());
    List<WasiPathBroker.Entry> entries;
    try {
      entries = broker.listing(dir);
    } catch (IOException | java.io.UncheckedIOException e) {
      return Errno.IO;
    }
    long used = 0;
    for (long i = cookie; i < entries.size() && used < cap; i++) {
      WasiPathBroker.Entry e = entries.get((int) i);
      byte[] name = e.name().getBytes(StandardCharsets.UTF_8);
      ByteBuffer d =
          ByteBuffer.allocate(DIRENT_HEADER_BYTES + name.length).order(ByteOrder.LITTLE_ENDIAN);
      d.putLong(i + 1).putLong(e.ino()).putInt(name.length).put(e.type());
      d.position(DIRENT_HEADER_BYTES);
      d.put(name);
      // A last entry that does not fit is cut: buf_used == buf_len tells libc to ask again.
      int n = (int) Math.min(d.capacity(), cap - used);
      memory.write((int) (buf + used), d.array(), 0, n);
      used += n;
    }
    memory.writeI32((int) usedPtr, (int) used);
    return Errno.SUCCESS;
  }

  int fdFilestatGet(Memory memory, int fd, int buf) {
    if (!new GuestMemory(memory).inBounds(buf, FILESTAT_BYTES)) {
      return Errno.FAULT;
    }
    readThrough(fd);
    int errno = wasi.fdFilestatGet(memory, fd, (int) buf);
    if (errno == Errno.SUCCESS) {
      normalizeTimes(memory, buf);
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

  int fdClose(int fd) {
    if (isReserved(fd)) {
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

  int fdRenumber(int from, int to) {
    if (isReserved(from) || isReserved(to)) {
      return Errno.NOTSUP;
    }
    int errno = wasi.fdRenumber(from, to);
    if (errno == Errno.SUCCESS && broker != null && from != to) {
      broker.renumbered(from, to);
    }
    return errno;
  }

  private boolean isReserved(int fd) {
    return fd >= 0 && fd <= (broker == null ? WasiPathBroker.ROOT_FD : broker.lastPreopenFd());
  }

  // ---- writes through descriptors: bounded by the module's storage quota ----

  int fdWrite(Memory memory, int fd, int iovs, int iovsLen, int nwrittenPtr) {
    return grown(
        fd,
        (o, size) -> {
          long len = iovecBytes(new GuestMemory(memory), iovs, iovsLen);
          return len < 0 ? -1 : saturatingAdd(o.append() ? size : position(memory, fd), len);
        },
        () -> wasi.fdWrite(memory, fd, iovs, iovsLen, nwrittenPtr));
  }

  int fdPwrite(Memory memory, int fd, int iovs, int iovsLen, long offset, int nwrittenPtr) {
    return grown(
        fd,
        (o, size) -> {
          long len = iovecBytes(new GuestMemory(memory), iovs, iovsLen);
          return len < 0 || offset < 0 ? -1 : saturatingAdd(offset, len);
        },
        () -> wasi.fdPwrite(memory, fd, iovs, iovsLen, offset, nwrittenPtr));
  }

  int fdAllocate(int fd, long offset, long len) {
    return grown(
        fd,
        (o, size) -> offset < 0 || len < 0 ? -1 : saturatingAdd(offset, len),
        () -> wasi.fdAllocate(fd, offset, len));
  }

  int fdFilestatSetSize(int fd, long newSize) {
    return grown(
        fd, (o, size) -> newSize < 0 ? -1 : newSize, () -> wasi.fdFilestatSetSize(fd, newSize));
  }

  int fdFilestatSetTimes(int fd, long atim, long mtim, int fstFlags) {
    return grown(fd, (o, size) -> 0, () -> wasi.fdFilestatSetTimes(fd, atim, mtim, fstFlags));
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
  private int grown(int fd, End end, Act0 act) {
    WasiPathBroker.Opened o = broker == null ? null : broker.opened(fd);
    if (o == null || o.directory() || isReserved(fd)) {
      return act.run();
    }
    if (!o.writable()) {
      return Errno.NOTCAPABLE;
    }
    Path host = broker.host(o.rel());
    if (StorageRoot.multiplyLinked(host)) {
      return Errno.PERM;
    }
    long size = StorageRoot.size(host);
    long newEnd = end.of(o, size);
    if (newEnd < 0) {
      return Errno.INVAL;
    }
    long growth = Math.max(0, newEnd - size);
    StorageLedger ledger = broker.ledgerOf(o.rel());
    if (!ledger.reserveWrite(growth)) {
      return Errno.DQUOT;
    }
    try {
      return act.run();
    } finally {
      ledger.settleWrite(growth, StorageRoot.size(host) - size - growth);
    }
  }

  private static long saturatingAdd(long x, long y) {
    long r = x + y;
    return ((x ^ r) & (y ^ r)) < 0 ? Long.MAX_VALUE : r;
  }

  /** The descriptor's current offset, read through a scratch word that is put back after. */
  private long position(Memory memory, int fd) {
    GuestMemory mem = new GuestMemory(memory);
    if (!mem.inBounds(0, 8)) {
      return Long.MAX_VALUE;
    }
    byte[] saved = mem.read(0, 8);
    try {
      int errno = wasi.fdTell(memory, fd, 0);
      return errno == Errno.SUCCESS ? memory.readLong(0) : Long.MAX_VALUE;
    } finally {
      mem.write(0, saved);
    }
  }

  /** The total length of an iovec array, or -1 when it lies outside memory. */
  static long iovecBytes(GuestMemory mem, long iovs, long count) {
    long n = count & 0xffffffffL;
    long base = iovs & 0xffffffffL;
    if (!mem.inBounds(base, n * 8)) {
      return -1;
    }
    long total = 0;
    for (long i = 0; i < n; i++) {
      long ptr = mem.u32(base + i * 8);
      long len = mem.u32(base + i * 8 + 4);
      if (!mem.inBounds(ptr, len)) {
        return -1;
      }
      total += len;
    }
    return total;
  }

  /** Notes cut output in the log and closes every descriptor the guest left open. */
  @Override
  public void close() {
    noteCut("stdout", stdout.output());
    noteCut("stderr", stderr.output());
    wasi.close();
  }
}
