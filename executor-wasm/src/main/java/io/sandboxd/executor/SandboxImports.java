package io.sandboxd.executor;

import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wasm.types.FunctionType;
import com.dylibso.chicory.wasm.types.ValType;
import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.HostService;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The `sandbox` import namespace (ABI.md): each function asks the Enforcer first, answers a denial
 * with a status code, never a trap, and journals every nondeterministic input it hands the guest.
 * The capability-specific bodies live in {@link KvCalls}, {@link StorageCalls}, {@link
 * EgressCalls}, {@link ExecCalls} and {@link InferCalls}.
 */
final class SandboxImports {
  static final String NAMESPACE = "sandbox";

  private static final ValType I32 = ValType.I32;
  private static final ValType I64 = ValType.I64;
  private static final Map<String, FunctionType> SIGNATURES;

  static {
    Map<String, FunctionType> s = new TreeMap<>();
    s.put("log", sig(I32, I32));
    s.put("clock_now", sig(I32));
    s.put("random_u64", sig(I32));
    s.put("kv_get", sig(I32, I32, I32, I32, I32));
    s.put("kv_put", sig(I32, I32, I32, I32));
    s.put("storage_read", sig(I32, I32, I64, I32, I32, I32));
    s.put("storage_write", sig(I32, I32, I64, I32, I32));
    s.put("storage_delete", sig(I32, I32));
    s.put("egress", sig(I32, I32, I32, I32, I32));
    s.put("exec", sig(I32, I32, I32, I32, I32));
    s.put("infer", sig(I32, I32, I32, I32, I32));
    s.put("yield_point", sig());
    SIGNATURES = Collections.unmodifiableMap(s);
  }

  private SandboxImports() {}

  private static FunctionType sig(ValType... params) {
    return FunctionType.of(List.of(params), List.of(ValType.I32));
  }

  static FunctionType signature(String name) {
    return SIGNATURES.get(name);
  }

  static String names() {
    return String.join(", ", SIGNATURES.keySet());
  }

  static List<HostFunction> functions(RunContext ctx) {
    List<HostFunction> fns = new ArrayList<>();
    fns.add(fn("log", (mem, a) -> log(ctx, mem, a[0], a[1])));
    fns.add(fn("clock_now", (mem, a) -> clockNow(ctx, mem, a[0])));
    fns.add(fn("random_u64", (mem, a) -> randomU64(ctx, mem, a[0])));
    fns.add(fn("kv_get", (mem, a) -> KvCalls.get(ctx, mem, a[0], a[1], a[2], a[3], a[4])));
    fns.add(fn("kv_put", (mem, a) -> KvCalls.put(ctx, mem, a[0], a[1], a[2], a[3])));
    fns.add(
        fn(
            "storage_read",
            (mem, a) -> StorageCalls.read(ctx, mem, a[0], a[1], a[2], a[3], a[4], a[5])));
    fns.add(
        fn(
            "storage_write",
            (mem, a) -> StorageCalls.write(ctx, mem, a[0], a[1], a[2], a[3], a[4])));
    fns.add(fn("storage_delete", (mem, a) -> StorageCalls.delete(ctx, mem, a[0], a[1])));
    fns.add(fn("egress", (mem, a) -> EgressCalls.egress(ctx, mem, a[0], a[1], a[2], a[3], a[4])));
    fns.add(fn("exec", (mem, a) -> ExecCalls.exec(ctx, mem, a[0], a[1], a[2], a[3], a[4])));
    fns.add(fn("infer", (mem, a) -> InferCalls.infer(ctx, mem, a[0], a[1], a[2], a[3], a[4])));
    fns.add(fn("yield_point", (mem, a) -> yieldPoint(ctx)));
    return fns;
  }

  /** The body of one import, given the guest's memory and its arguments. */
  interface Body {
    int call(GuestMemory memory, long[] args);
  }

  private static HostFunction fn(String name, Body body) {
    return new HostFunction(
        NAMESPACE,
        name,
        SIGNATURES.get(name),
        (Instance inst, long... args) ->
            new long[] {body.call(new GuestMemory(inst.memory()), args)});
  }

  static int status(Decision d) {
    if (d instanceof Decision.Denied) {
      return AbiStatus.DENIED;
    }
    return d instanceof Decision.Tainted ? AbiStatus.TAINTED : AbiStatus.OK;
  }

  /** A refused answer carrying the decision's status. */
  static HostAnswer refusal(Decision d) {
    return HostAnswer.refused(d.name(), status(d));
  }

  /**
   * Reads the JSON request of a {@code (req, len, out, cap, len_out)} call. Returns null when the
   * call must end at once with {@code status[0]}: FAULT for a bad range, INVALID for bad JSON.
   */
  static JsonNode jsonRequest(
      RunContext ctx,
      GuestMemory mem,
      long reqPtr,
      long reqLen,
      long outPtr,
      long cap,
      long lenOut,
      int[] status) {
    byte[] raw = mem.readChecked(reqPtr, reqLen);
    if (raw == null || !mem.inBounds(lenOut, 4) || !mem.inBounds(outPtr, cap)) {
      ctx.countCall();
      status[0] = AbiStatus.FAULT;
      return null;
    }
    try {
      return CanonicalJson.parse(raw);
    } catch (AttestException e) {
      ctx.countCall();
      status[0] = AbiStatus.INVALID;
      return null;
    }
  }

  /** Hands an answer to the guest: its status, or its payload into {@code (out, cap, len_out)}. */
  static int deliver(GuestMemory mem, HostAnswer a, long outPtr, long cap, long lenOut) {
    return a.status() != AbiStatus.OK ? a.status() : mem.writeOut(outPtr, cap, lenOut, a.payload());
  }

  /** Reads guest bytes as strict UTF-8, or null when they are not. */
  static String utf8(byte[] bytes) {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  private static int log(RunContext ctx, GuestMemory mem, long ptr, long len) {
    ctx.countCall();
    Decision d = ctx.enforcer.mayHost(HostService.LOGGING);
    if (!d.allowed()) {
      return status(d);
    }
    if ((len & 0xffffffffL) > RunContext.MAX_LOG_BYTES) {
      return AbiStatus.INVALID;
    }
    if (ctx.logTruncated()) {
      // The run's log is full: further lines are dropped unread (a bad range is still a FAULT).
      return mem.inBounds(ptr, len) ? AbiStatus.OK : AbiStatus.FAULT;
    }
    byte[] msg = mem.readChecked(ptr, len);
    if (msg == null) {
      return AbiStatus.FAULT;
    }
    if (!isUtf8(msg)) {
      return AbiStatus.INVALID;
    }
    ctx.appendLog(msg);
    return AbiStatus.OK;
  }

  /** Strict UTF-8 check; plain ASCII (most log lines) is decided without a decoder. */
  static boolean isUtf8(byte[] bytes) {
    int i = 0;
    // Eight bytes at a time: ASCII has no high bit set in any of them.
    for (; i + 8 <= bytes.length; i += 8) {
      if (((long) LONGS.get(bytes, i) & 0x8080808080808080L) != 0) {
        return utf8(bytes) != null;
      }
    }
    for (; i < bytes.length; i++) {
      if (bytes[i] < 0) {
        return utf8(bytes) != null;
      }
    }
    return true;
  }

  private static final java.lang.invoke.VarHandle LONGS =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private static int clockNow(RunContext ctx, GuestMemory mem, long outPtr) {
    if (!mem.inBounds(outPtr, 8)) {
      ctx.countCall();
      return AbiStatus.FAULT;
    }
    HostAnswer a =
        ctx.journaledIfAllowed(
            ctx.enforcer.mayHost(HostService.CLOCK),
            // Not granted: the normalized constant, never an error and never the wall clock.
            d -> new HostAnswer(d.name(), AbiStatus.OK, le64(ctx.clockConstantMs * 1_000_000L)),
            "clock_now",
            CanonicalJson.mapper().createObjectNode(),
            () -> HostAnswer.allow(le64(ctx.clockNanos.getAsLong())),
            null);
    mem.write(outPtr, a.payload());
    return a.status();
  }

  private static int randomU64(RunContext ctx, GuestMemory mem, long outPtr) {
    if (!mem.inBounds(outPtr, 8)) {
      ctx.countCall();
      return AbiStatus.FAULT;
    }
    HostAnswer a =
        ctx.journaledIfAllowed(
            ctx.enforcer.mayHost(HostService.RANDOM),
            SandboxImports::refusal,
            "random_u64",
            CanonicalJson.mapper().createObjectNode(),
            () -> HostAnswer.allow(le64(ctx.random.nextLong())),
            null);
    if (a.status() == AbiStatus.OK) {
      mem.write(outPtr, a.payload());
    }
    return a.status();
  }

  private static int yieldPoint(RunContext ctx) {
    // Parking arrives with durable runs; until then the supervisor always answers OK.
    return ctx.journaled(
            "yield_point",
            CanonicalJson.mapper().createObjectNode(),
            () -> HostAnswer.allow(new byte[0]))
        .status();
  }

  static byte[] le64(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
  }
}
