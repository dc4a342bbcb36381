package io.sandboxd.metering;

/** Which RAPL register layout a CPU uses. */
public enum CpuVendor {
  /** Intel: units 0x606, package 0x611, DRAM 0x619. */
  Intel(0x606L, 0x611L, 0x619L),
  /** AMD Zen: units 0xC0010299, package 0xC001029B; no DRAM domain. */
  Amd(0xC001_0299L, 0xC001_029BL, -1L);

  final long unitMsr;
  final long packageMsr;

  /** -1 when the vendor has no DRAM energy register. */
  final long dramMsr;

  CpuVendor(long unitMsr, long packageMsr, long dramMsr) {
    this.unitMsr = unitMsr;
    this.packageMsr = packageMsr;
    this.dramMsr = dramMsr;
  }

  /** The vendor named by a {@code vendor_id} line of /proc/cpuinfo, or null for anyone else. */
  static CpuVendor fromVendorId(String vendorId) {
    return switch (vendorId.trim()) {
      case "GenuineIntel" -> Intel;
      case "AuthenticAMD", "HygonGenuine" -> Amd;
      default -> null;
    };
  }
}
