package io.sandboxd.daemon.cli;

import com.google.protobuf.ByteString;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Path;

/** The {@code MODULE.wasm|b3:ADDR} argument of {@code run} and {@code bench}. */
final class ModuleArgument {
  private ModuleArgument() {}

  /** A b3: address names a module the daemon holds; anything else is a file, sent as bytes. */
  static SubmitRequest.Builder into(SubmitRequest.Builder req, Path module)
      throws Input.Unreadable {
    String name = module.toString();
    return name.startsWith("b3:")
        ? req.setModuleAddress(name)
        : req.setModule(ByteString.copyFrom(Input.bytes(module)));
  }
}
