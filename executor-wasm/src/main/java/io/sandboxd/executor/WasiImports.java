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
import io.sandboxd.enforcer.HostService;
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
    if (broker != null) {
      // Preopened as "/": wasi-libc then maps "/x", "x" and "./x" alike beneath the root.
      opts.withDirectory("/", broker.root());
    }
    this.wasi = WasiPreview1.builder().withOptions(opts.build()).build();
  }

  /**
   * The WASI imports of one run, or null when the module imports nothing from this namespace.
   * {@code storageRoot} (a real path) is preopened as "/" when present; {@code name} is argv[0].
   */
  static WasiImports forRun(
      WasmModule module,
      RunContext ctx,
      String name,
      Map<String, String> env,
      Optional<Path> storageRoot) {
    if (!imports(module)) {
      return null;
    }
    WasiPathBroker broker =
        storageRoot.map(root -> new WasiPathBroker(ctx.enforcer, root)).orElse(null);
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
      if (c != null) {
        out.add(
            new HostFunction(
                NAMESPACE,
                f.name(),
                f.functionType(),
                (inst, args) -> new long[] {c.apply(inst, args)}));
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

  private Map<String, Call> brokeredCalls() {
    Map<String, Call> m = new HashMap<>();
    m.put("clock_time_get", this::clockTimeGet);
    m.put("random_get", this::randomGet);
    m.put("path_open", counted(this::pathOpen));
    m.put("path_create_directory", counted(this::pathCreateDirectory));
    m.put("path_filestat_get", counted(this::pathFilestatGet));
    m.put("path_filestat_set_times", counted(this::pathFilestatSetTimes));
    m.put("path_link", counted(this::pathLink));
    m.put("path_readlink", counted(this::pathReadlink));
    m.put("path_remove_directory", counted(this::pathRemoveDirectory));
    m.put("path_rename", counted(this::pathRename));
    m.put("path_symlink", counted(this::pathSymlink));
    m.put("path_unlink_file", counted(this::pathUnlinkFile));
    m.put("fd_readdir", counted(this::fdReaddir));
    m.put("fd_filestat_get", counted(this::fdFilestatGet));
    m.put("fd_close", counted(this::fdClose));
    m.put("fd_renumber", counted(this::fdRenumber));
    // Chicory traps on this one; a guest gets an errno instead.
    m.put("fd_fdstat_set_rights", counted((inst, a) -> Errno.NOTSUP));
    // No socket is ever handed to a unit: the network is the `sandbox.egress` import's business.
    for (String s : List.of("sock_accept", "sock_recv", "sock_send", "sock_shutdown")) {
      m.put(s, counted((inst, a) -> Errno.NOTSUP));
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
        ctx.journaledIfAllowed(
            ctx.enforcer.mayHost(HostService.CLOCK),
            // Not granted: the normalized constant for both clocks, never an error (§7.5).
            d -> new HostAnswer(d.name(), Errno.SUCCESS, le64(ctx.clockConstantMs * 1_000_000L)),
            "clock_now",
            request,
            () ->
                new HostAnswer(
                    "Allow",
                    Errno.SUCCESS,
                    le64(id == CLOCK_REALTIME ? ctx.clockNanos.getAsLong() : System.nanoTime())),
            null);
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
            ctx.enforcer.mayHost(HostService.RANDOM),
            d -> HostAnswer.refused(d.name(), Errno.ACCES),
            "random_u64",
            request,
            () -> {
              byte[] bytes = new byte[(int) len];
              ctx.random.nextBytes(bytes);
              return HostAnswer.allow(bytes);
            },
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
    int errno =
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
    if (errno == Errno.SUCCESS) {
      int fd = inst.memory().readInt((int) fdPtr);
      broker.opened(fd, b.rel(), Files.isDirectory(b.host(), LinkOption.NOFOLLOW_LINKS));
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
        b -> wasi.pathCreateDirectory(WasiPathBroker.ROOT_FD, b.forChicory()),
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
            wasi.pathFilestatSetTimes(
                WasiPathBroker.ROOT_FD,
                lookup & ~LOOKUP_SYMLINK_FOLLOW,
                b.forChicory(),
                a[4],
                a[5],
                (int) a[6]),
        PathMode.WRITE);
  }

  private int pathLink(Instance inst, long[] a) {
    GuestMemory mem = new GuestMemory(inst.memory());
    String oldRaw = string(mem, a[2], a[3]);
    String newRaw = string(mem, a[5], a[6]);
    if (oldRaw == null || newRaw == null) {
      return oldRaw == null ? stringErrno(mem, a[2], a[3]) : stringErrno(mem, a[5], a[6]);
    }
    // A new name for a file gives no more than its old name did: read the old, write the new.
    WasiPathBroker.Brokered from = resolve((int) a[0], oldRaw, follows((int) a[1]), PathMode.READ);
    if (!from.ok()) {
      return from.errno();
    }
    WasiPathBroker.Brokered to = resolve((int) a[4], newRaw, false, PathMode.WRITE);
    if (!to.ok()) {
      return to.errno();
    }
    return wasi.pathLink(
        WasiPathBroker.ROOT_FD, 0, from.forChicory(), WasiPathBroker.ROOT_FD, to.forChicory());
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
        b -> wasi.pathRemoveDirectory(WasiPathBroker.ROOT_FD, b.forChicory()),
        PathMode.DELETE);
  }

  private int pathUnlinkFile(Instance inst, long[] a) {
    return onePath(
        inst,
        (int) a[0],
        a[1],
        a[2],
        false,
        b -> wasi.pathUnlinkFile(WasiPathBroker.ROOT_FD, b.forChicory()),
        PathMode.DELETE);
  }

  private int pathRename(Instance inst, long[] a) {
    GuestMemory mem = new GuestMemory(inst.memory());
    String oldRaw = string(mem, a[1], a[2]);
    String newRaw = string(mem, a[4], a[5]);
    if (oldRaw == null || newRaw == null) {
      return oldRaw == null ? stringErrno(mem, a[1], a[2]) : stringErrno(mem, a[4], a[5]);
    }
    // Moving a file takes it from its old name (read + delete) and gives it a new one (write), so
    // a rename can never make readable what was not.
    WasiPathBroker.Brokered from =
        resolve((int) a[0], oldRaw, false, PathMode.READ, PathMode.DELETE);
    if (!from.ok()) {
      return from.errno();
    }
    WasiPathBroker.Brokered to = resolve((int) a[3], newRaw, false, PathMode.WRITE);
    if (!to.ok()) {
      return to.errno();
    }
    int beneath = renameBeneath(from, to);
    if (beneath != Errno.SUCCESS) {
      return beneath;
    }
    return wasi.pathRename(
        WasiPathBroker.ROOT_FD, from.forChicory(), WasiPathBroker.ROOT_FD, to.forChicory());
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
        if (broker.decide(oldRel, PathMode.READ, PathMode.DELETE) != Errno.SUCCESS
            || broker.decide(newRel, PathMode.WRITE) != Errno.SUCCESS) {
          return Errno.ACCES;
        }
      }
    } catch (IOException | java.io.UncheckedIOException e) {
      return Errno.IO;
    }
    return Errno.SUCCESS;
  }

  private int pathSymlink(Instance inst, long[] a) {
    GuestMemory mem = new GuestMemory(inst.memory());
    String target = string(mem, a[0], a[1]);
    String newRaw = string(mem, a[3], a[4]);
    if (target == null || newRaw == null) {
      return target == null ? stringErrno(mem, a[0], a[1]) : stringErrno(mem, a[3], a[4]);
    }
    if (broker == null) {
      return Errno.BADF;
    }
    // The target is kept beneath the root; reading through the link is decided for both names.
    WasiPathBroker.Brokered t = broker.lexical((int) a[2], target);
    if (!t.ok()) {
      return t.errno();
    }
    WasiPathBroker.Brokered link = resolve((int) a[2], newRaw, false, PathMode.WRITE);
    if (!link.ok()) {
      return link.errno();
    }
    return wasi.pathSymlink(t.forChicory(), WasiPathBroker.ROOT_FD, link.forChicory());
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
    if (!ctx.enforcer.mayHost(HostService.CLOCK).allowed()) {
      long t = ctx.clockConstantMs * 1_000_000L;
      for (int off = 40; off <= 56; off += 8) {
        memory.writeLong((int) buf + off, t);
      }
    }
  }

  private int fdClose(Instance inst, long[] a) {
    int fd = (int) a[0];
    if (broker != null && fd == WasiPathBroker.ROOT_FD) {
      // Every brokered path is acted on through this descriptor: it stays open for the run.
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
    if (broker != null && (from == WasiPathBroker.ROOT_FD || to == WasiPathBroker.ROOT_FD)) {
      return Errno.NOTSUP;
    }
    int errno = wasi.fdRenumber(from, to);
    if (errno == Errno.SUCCESS && broker != null && from != to) {
      broker.renumbered(from, to);
    }
    return errno;
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
