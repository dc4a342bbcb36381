package io.sandboxd.attest;

import java.util.List;

/**
 * The device-class spellings a signed record may use as keys (WIRE.md §2.1), in declaration order.
 * Records keep classes as names so that a verifier needs this module alone.
 */
public final class DeviceClassName {
  public static final List<String> ALL =
      List.of("Cpu", "Simd", "Gpu", "Npu", "Tpu", "Lpu", "Photonic", "Quantum");

  private DeviceClassName() {}

  public static String check(String name, String path) {
    if (!ALL.contains(name)) {
      throw new AttestException(path + ": unknown device class \"" + name + "\"");
    }
    return name;
  }
}
