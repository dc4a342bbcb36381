package io.sandboxd.executor;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Hex;
import io.sandboxd.enforcer.Bytes;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.FlowSource;
import io.sandboxd.enforcer.KvDirection;
import java.sql.SQLException;
import java.util.Optional;

/** `kv_get` and `kv_put`: the node's kv store, scoped by the grant's direction and prefixes. */
final class KvCalls {
  private KvCalls() {}

  static int get(
      RunContext ctx,
      GuestMemory mem,
      long keyPtr,
      long keyLen,
      long outPtr,
      long cap,
      long lenOut) {
    if ((keyLen & 0xffffffffL) > KvStore.MAX_KEY_BYTES) {
      return AbiStatus.INVALID;
    }
    byte[] key = mem.readChecked(keyPtr, keyLen);
    if (key == null || !mem.inBounds(lenOut, 4) || !mem.inBounds(outPtr, cap)) {
      return AbiStatus.FAULT;
    }
    ObjectNode request = CanonicalJson.mapper().createObjectNode().put("key", Hex.encode(key));
    HostAnswer a =
        ctx.journaledIfAllowed(
            ctx.enforcer.mayKv(KvDirection.READ, key),
            SandboxImports::refusal,
            "kv_get",
            request,
            () ->
                live(
                    ctx,
                    KvDirection.READ,
                    key,
                    store -> {
                      Optional<byte[]> v = store.get(key);
                      return v.isPresent()
                          ? HostAnswer.allow(v.get())
                          : HostAnswer.refused("Allow", AbiStatus.NOT_FOUND);
                    }),
            new FlowSource.KvRead(Bytes.of(key)));
    return SandboxImports.deliver(mem, a, outPtr, cap, lenOut);
  }

  /**
   * Stores a value. The answer is journaled (with a hash of the value), so a replay answers it as
   * recorded and writes nothing; past the module's kv quota the guest gets QUOTA.
   */
  static int put(
      RunContext ctx, GuestMemory mem, long keyPtr, long keyLen, long valPtr, long valLen) {
    if ((keyLen & 0xffffffffL) > KvStore.MAX_KEY_BYTES
        || (valLen & 0xffffffffL) > KvStore.MAX_VALUE_BYTES) {
      return ctx.counted(AbiStatus.INVALID);
    }
    byte[] key = mem.readChecked(keyPtr, keyLen);
    byte[] value = mem.readChecked(valPtr, valLen);
    if (key == null || value == null) {
      return ctx.counted(AbiStatus.FAULT);
    }
    ObjectNode request =
        CanonicalJson.mapper()
            .createObjectNode()
            .put("key", Hex.encode(key))
            .put("len", value.length)
            .put("value", io.sandboxd.attest.Blake3.hex(value));
    return ctx.journaled(
            "kv_put",
            request,
            () ->
                live(
                    ctx,
                    KvDirection.WRITE,
                    key,
                    store ->
                        store.put(key, value, ctx.kv.owner(), ctx.kv.quotaBytes())
                                == KvStore.Put.STORED
                            ? HostAnswer.allow(new byte[0])
                            : HostAnswer.refused("Allow", AbiStatus.QUOTA)))
        .status();
  }

  /** One operation on the node's kv store, which may fail reading or writing the database. */
  private interface StoreCall {
    HostAnswer on(KvStore store) throws SQLException;
  }

  /**
   * What the live kv store answers: the grant decides first, then {@code call} runs against the
   * store; no store, or a failing one, is UNAVAILABLE, and a failing one is told to the node.
   */
  private static HostAnswer live(
      RunContext ctx, KvDirection direction, byte[] key, StoreCall call) {
    Decision d = ctx.enforcer.mayKv(direction, key);
    if (!d.allowed()) {
      return SandboxImports.refusal(d);
    }
    if (ctx.kv.store().isEmpty()) {
      return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
    }
    try {
      return call.on(ctx.kv.store().get());
    } catch (SQLException e) {
      // The unit cannot cause a failing statement: a full disk or a broken file is the node's.
      ctx.services
          .faults()
          .told(
              direction == KvDirection.READ ? "kv_get" : "kv_put",
              "failed on this node, and the unit was answered UNAVAILABLE: " + e);
      return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
    }
  }
}
