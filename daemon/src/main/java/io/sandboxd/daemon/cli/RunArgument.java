package io.sandboxd.daemon.cli;

import picocli.CommandLine.Parameters;

/** The {@code RUN} argument every command about one run mixes in. */
final class RunArgument {
  @Parameters(index = "0", paramLabel = "RUN", description = "Run id.")
  String id;
}
