package io.sandboxd.attest;

/**
 * A device class: what a grant lets a unit dispatch to, what a meter measures and what a receipt
 * reports energy for. The one definition every module uses; constants are spelled as in JSON.
 */
public enum DeviceClass {
  Cpu,
  Simd,
  Gpu,
  Npu,
  Tpu,
  Lpu,
  Photonic,
  Quantum;

  /** The JSON spelling of this class. */
  public String jsonName() {
    return name();
  }

  /** Parses the exact JSON spelling; throws {@link IllegalArgumentException} otherwise. */
  public static DeviceClass fromJson(String text) {
    for (DeviceClass c : values()) {
      if (c.name().equals(text)) {
        return c;
      }
    }
    throw new IllegalArgumentException("unknown device class \"" + text + "\"");
  }

  /** Parses a class named in a signed record, naming the record field at fault. */
  public static DeviceClass parse(String text, String path) {
    try {
      return fromJson(text);
    } catch (IllegalArgumentException e) {
      throw new AttestException(path + ": " + e.getMessage(), e);
    }
  }
}
