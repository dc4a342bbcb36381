package io.sandboxd.daemon.cli;

import com.google.protobuf.ByteString;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Path;
import picocli.CommandLine.Parameters;

/** The {@code MODULE.wasm|b3:ADDR} argument {@code run} and {@code bench} mix in. */
final class ModuleArgument {
  @Parameters(
      index = "0",
      paramLabel = "MODULE.wasm|b3:ADDR",
      description = "The unit's module, or b3:<64 hex> of one the daemon holds (modules put).")
  Path path;

  /** A b3: address names a module the daemon holds; anything else is a file, sent as bytes. */
  SubmitRequest.Builder into(SubmitRequest.Builder req) throws Input.Unreadable {
    String name = path.toString();
    return name.startsWith("b3:")
        ? req.setModuleAddress(name)
        : req.setModule(ByteString.copyFrom(Input.bytes(path)));
  }
}
