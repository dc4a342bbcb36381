package io.sandboxd.daemon.run;

import io.sandboxd.attest.Ed25519Engine;
import io.sandboxd.daemon.NodeIdentity;
import io.sandboxd.daemon.store.RunStore;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/** A node identity and its run store in the test's temporary folder, closed after each test. */
abstract class NodeStoreFixture {
  @TempDir Path tmp;
  NodeIdentity node;
  RunStore store;

  @BeforeEach
  void openStore() throws Exception {
    node = NodeIdentity.load(tmp, tmp.resolve("keys/node.ed25519"), Ed25519Engine::bouncyCastle);
    store = RunStore.open(tmp.resolve("runs.db"), node.key());
  }

  @AfterEach
  void closeStore() {
    store.close();
  }
}
