package io.sandboxd.executor;

import io.sandboxd.attest.Provenance;

/** Energy attributed to a unit for one device class, with the meter it came from. */
public record ClassEnergyReading(
    long uj, Provenance provenance, String source, long resolutionUj, long minWindowNs) {}
