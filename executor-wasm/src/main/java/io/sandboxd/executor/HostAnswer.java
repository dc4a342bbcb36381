package io.sandboxd.executor;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What a journaled host call handed the guest: the Enforcer's decision, the status code and the
 * payload. Its bytes ({@code status as i32 LE ‖ payload}) are the journal's response blob, so a
 * replay returns exactly what the guest first saw.
 */
public record HostAnswer(String decision, int status, byte[] payload) {
  public HostAnswer {
    payload = payload.clone();
  }

  public static HostAnswer allow(byte[] payload) {
    return new HostAnswer("Allow", AbiStatus.OK, payload);
  }

  public static HostAnswer refused(String decision, int status) {
    return new HostAnswer(decision, status, new byte[0]);
  }

  @Override
  public byte[] payload() {
    return payload.clone();
  }

  public byte[] toBytes() {
    return ByteBuffer.allocate(4 + payload.length)
        .order(ByteOrder.LITTLE_ENDIAN)
        .putInt(status)
        .put(payload)
        .array();
  }

  public static HostAnswer fromBytes(String decision, byte[] bytes) {
    if (bytes.length < 4) {
      throw new IllegalArgumentException("journal response: " + bytes.length + " bytes, need >= 4");
    }
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    int status = b.getInt();
    byte[] payload = new byte[bytes.length - 4];
    b.get(payload);
    return new HostAnswer(decision, status, payload);
  }
}
