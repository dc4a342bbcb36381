package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/** A stopped daemon's state directory: recorded by running example units, copied to tamper with. */
final class StoppedState {
  private StoppedState() {}

  /**
   * Starts a daemon on {@code state}, runs each of the {@code examples} under its own grants in
   * order, and stops it; returns the replies in the same order.
   */
  static List<SubmitReply> record(Path state, Path socket, String... examples) throws Exception {
    List<SubmitReply> replies = new ArrayList<>(examples.length);
    try (DaemonProcess d = DaemonProcess.start(state, socket);
        DaemonClient c = new DaemonClient(d.socket)) {
      for (String example : examples) {
        replies.add(
            Submissions.submit(
                c, Submissions.exampleUnit(example), Submissions.exampleGrants(example)));
      }
    }
    return replies;
  }

  /**
   * Asserts that {@code d}, started on a stopped state of {@code runs} runs, checked every record
   * of it before serving: its `runs list`.
   */
  static String verifiedRunsList(DaemonProcess d, int runs) throws Exception {
    assertTrue(
        d.log().contains("verify, every record and column checks against the signed ledger"),
        d.log());
    assertTrue(d.log().contains("(" + runs + " runs, chain "), d.log());
    DaemonProcess.Result list = d.ctl("runs", "list");
    assertEquals(0, list.exit(), list.err());
    return list.out();
  }

  /**
   * Starts a daemon on {@code state} under the configuration file {@code config} and asks it to
   * replay {@code run}, which it must refuse: the refusal.
   */
  static StatusRuntimeException refusedReplay(Path state, Path socket, Path config, String run)
      throws Exception {
    try (DaemonProcess d = DaemonProcess.start(state, socket, "--config", config.toString());
        DaemonClient c = new DaemonClient(socket)) {
      return assertThrows(StatusRuntimeException.class, () -> Submissions.replay(c, run));
    }
  }

  /** The run store of the stopped daemon state {@code state}, opened directly. */
  static Connection store(Path state) throws SQLException {
    Connection c = DriverManager.getConnection("jdbc:sqlite:" + state.resolve("runs.db"));
    // Signed records are stored encoded: record_text/record_bytes read and write them as text.
    io.sandboxd.daemon.store.StoreEncoding.addSqlFunctions(c);
    return c;
  }

  /**
   * The rows {@code query} reads from {@code state}'s run store, its parameters bound to {@code
   * params} in order, each row as its columns' text (null where a column is).
   */
  static List<List<String>> rows(Path state, String query, String... params) throws SQLException {
    List<List<String>> out = new ArrayList<>();
    try (Connection c = store(state);
        PreparedStatement st = bound(c, query, params);
        ResultSet rs = st.executeQuery()) {
      int columns = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        String[] row = new String[columns];
        for (int i = 0; i < columns; i++) {
          row[i] = rs.getString(i + 1);
        }
        out.add(Arrays.asList(row));
      }
    }
    return out;
  }

  /**
   * Runs {@code statement} on {@code state}'s run store, its parameters bound to {@code params} in
   * order: how many rows it changed.
   */
  static int update(Path state, String statement, String... params) throws SQLException {
    try (Connection c = store(state);
        PreparedStatement st = bound(c, statement, params)) {
      return st.executeUpdate();
    }
  }

  private static PreparedStatement bound(Connection c, String sql, String... params)
      throws SQLException {
    PreparedStatement st = c.prepareStatement(sql);
    for (int i = 0; i < params.length; i++) {
      st.setString(i + 1, params[i]);
    }
    return st;
  }

  /** Runs each of {@code statements} on {@code state}'s run store; each must change a row. */
  static void tamper(Path state, String... statements) throws SQLException {
    try (Connection c = store(state)) {
      for (String s : statements) {
        try (PreparedStatement st = c.prepareStatement(s)) {
          assertTrue(st.executeUpdate() > 0, "changed nothing: " + s);
        }
      }
    }
  }

  /**
   * A {@link #copy} of {@code state} at {@code target}, {@link #tamper}ed with {@code statements}.
   */
  static Path tamperedCopy(Path state, Path target, String... statements) throws Exception {
    Path copy = copy(state, target);
    tamper(copy, statements);
    return copy;
  }

  /** A copy of {@code state} at {@code target}, permissions and file attributes kept. */
  static Path copy(Path state, Path target) throws Exception {
    try (Stream<Path> walk = Files.walk(state)) {
      for (Path p : walk.toList()) {
        Path t = target.resolve(state.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(t);
          Files.setPosixFilePermissions(t, Files.getPosixFilePermissions(p));
        } else {
          Files.copy(p, t, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
    return target;
  }
}
