package io.sandboxd.metering;

/**
 * The device classes energy is reported for; same names and order as the grant model's DeviceClass,
 * so callers map between the two by name.
 */
public enum EnergyClass {
  Cpu,
  Simd,
  Gpu,
  Npu,
  Tpu,
  Lpu,
  Photonic,
  Quantum
}
