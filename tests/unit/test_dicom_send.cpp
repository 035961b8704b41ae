// Send to PACS without a PACS: parsing "AET@host:port", the settings' node list (ui/model/dicom_nodes.hpp),
// the send report, and the network failures that need no server: a closed port fails at once, a server that
// accepts TCP but never answers fails after the timeout (never hangs), a peer that trickles its answer one
// byte at a time cannot stretch the timeout (a deadline over the exchange), unreadable files fail alone
// without connecting. The sends to a real PACS (Orthanc) are e2e.pacs_orthanc and gui.pacs*; the CLI against
// hostile peers is e2e.pacs_slow_peer.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "dicom_nodes.hpp"
#include "larmor/io/dicom_send.hpp"
#include "larmor/io/export.hpp"
#include "larmor/util/error.hpp"
#include "support/silent_server.hpp"
#include "support/trickling_peer.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;

namespace {

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

using larmor::test::SilentServer;  // support/silent_server.hpp

/// A port on 127.0.0.1 where nothing listens (bound, then closed).
int closedPort() {
  SilentServer s;
  const int p = s.port;
  return p;
}

}  // namespace

TEST(DicomSend, ParsesNodes) {
  const io::DicomNode n = io::parseDicomNode("ORTHANC@localhost:4242");
  EXPECT_EQ(n.aeTitle, "ORTHANC");
  EXPECT_EQ(n.host, "localhost");
  EXPECT_EQ(n.port, 4242);
  EXPECT_EQ(n.callingAeTitle, "LARMOR");
  EXPECT_EQ(io::toString(n), "ORTHANC@localhost:4242");
  const io::DicomNode v6 = io::parseDicomNode("PACS@[::1]:104");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(io::toString(v6), "PACS@[::1]:104");
  EXPECT_EQ(io::parseDicomNode("A B@10.0.0.2:11112").aeTitle, "A B");  // spaces are allowed inside an AE title
}

TEST(DicomSend, RefusesMalformedNodesWithOneLine) {
  for (const char* bad : {"ORTHANC@localhost", "localhost:4242", "@localhost:4242", "ORTHANC@:4242",
                          "ORTHANC@localhost:0", "ORTHANC@localhost:65536", "ORTHANC@localhost:42x",
                          "SEVENTEEN_CHARS_X@h:1", "A\\B@h:1", "   @h:1", "ORTHANC@localhost:"}) {
    const std::string e = errorOf([&] { io::parseDicomNode(bad); });
    EXPECT_NE(e.find(bad), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("AET@host:port"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(DicomSend, ReportSummary) {
  io::SendReport r;
  r.node = "ORTHANC@localhost:4242";
  r.results.resize(3);
  r.results[0].ok = r.results[2].ok = true;
  EXPECT_EQ(r.sent(), 2u);
  EXPECT_FALSE(r.allSent());
  EXPECT_EQ(r.summary(), "sent 2/3 instances to ORTHANC@localhost:4242");
  r.cancelled = true;
  EXPECT_EQ(r.summary(), "sent 2/3 instances to ORTHANC@localhost:4242, cancelled");
}

TEST(DicomSend, FilesToSend) {
  const auto d = std::filesystem::path(LARMOR_TEST_TMP) / ("dicom-send-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d / "sub");
  for (const char* f : {"b.dcm", "a.dcm", "notes.txt", "sub/c.dcm"}) std::ofstream(d / f) << "x";
  const auto files = io::dicomFilesToSend(d.string());
  ASSERT_EQ(files.size(), 2u);  // sorted, .dcm only, not recursive
  EXPECT_EQ(std::filesystem::path(files[0]).filename(), "a.dcm");
  EXPECT_EQ(std::filesystem::path(files[1]).filename(), "b.dcm");
  EXPECT_EQ(io::dicomFilesToSend((d / "notes.txt").string()).size(), 1u);  // a file is sent as it is
  EXPECT_NE(errorOf([&] { io::dicomFilesToSend((d / "missing").string()); }).find("no such file"), std::string::npos);
  std::filesystem::create_directories(d / "empty");
  EXPECT_NE(errorOf([&] { io::dicomFilesToSend((d / "empty").string()); }).find("no .dcm files"), std::string::npos);

  if (!io::dicomNetworkAvailable()) return;
  // Unreadable files fail one by one, without a connection (the port is closed: connecting would throw).
  io::DicomNode n = io::parseDicomNode("X@127.0.0.1:" + std::to_string(closedPort()));
  const io::SendReport r = io::send(n, files);
  ASSERT_EQ(r.results.size(), 2u);
  for (const auto& x : r.results) {
    EXPECT_FALSE(x.ok);
    EXPECT_NE(x.message.find("cannot read as DICOM"), std::string::npos) << x.message;
  }
  EXPECT_NE(errorOf([&] { io::send(n, {}); }).find("no files to send"), std::string::npos);
  std::filesystem::remove_all(d);
}

TEST(DicomSend, ClosedPortFailsAtOnce) {
  if (!io::dicomNetworkAvailable()) GTEST_SKIP() << "built without LARMOR_IO";
  const io::DicomNode n = io::parseDicomNode("ORTHANC@127.0.0.1:" + std::to_string(closedPort()));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = errorOf([&] { io::echo(n); });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_NE(e.find("PACS " + io::toString(n) + ": cannot connect for C-ECHO"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(DicomSend, SilentServerTimesOut) {
  if (!io::dicomNetworkAvailable()) GTEST_SKIP() << "built without LARMOR_IO";
  SilentServer s;
  io::DicomNode n = io::parseDicomNode("ORTHANC@127.0.0.1:" + std::to_string(s.port));
  n.timeoutSeconds = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = errorOf([&] { io::echo(n); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(e, "PACS " + io::toString(n) + " did not answer C-ECHO within 1 s");
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 4.0);
}

static double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A-ASSOCIATE-AC header, then a byte every 0.5 s (inside DCMTK's 2 s per-read timeout) for 20 s: before the
// deadline over the whole exchange, echo waited the 20 s and then failed with "cannot connect".
TEST(DicomSend, TricklingPeerCannotStretchTheEchoTimeout) {
  if (!io::dicomNetworkAvailable()) GTEST_SKIP() << "built without LARMOR_IO";
  larmor::test::TricklingPeer peer;
  io::DicomNode n = io::parseDicomNode("ORTHANC@127.0.0.1:" + std::to_string(peer.port()));
  n.timeoutSeconds = 2;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = errorOf([&] { io::echo(n); });
  const double took = secondsSince(t0);
  EXPECT_EQ(e, "PACS " + io::toString(n) + " did not answer C-ECHO within 2 s");
  EXPECT_GE(took, 1.9);
  EXPECT_LT(took, 3.5);
}

TEST(DicomSend, TricklingPeerCannotStretchTheSendTimeout) {
  if (!io::dicomNetworkAvailable()) GTEST_SKIP() << "built without LARMOR_IO";
  const std::string dir = larmor::testing::freshTestDir("dicom-send");
  auto ph = larmor::testing::reconstructPhantom(16, 16, 1, 2);
  const auto files = io::writeImageOutput(dir + "/series/", ph.r, ph.d).files;
  ASSERT_EQ(files.size(), 2u);
  larmor::test::TricklingPeer peer;
  io::DicomNode n = io::parseDicomNode("ORTHANC@127.0.0.1:" + std::to_string(peer.port()));
  n.timeoutSeconds = 2;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = errorOf([&] { io::send(n, files); });
  const double took = secondsSince(t0);
  EXPECT_EQ(e, "PACS " + io::toString(n) + " did not answer C-STORE within 2 s");
  EXPECT_GE(took, 1.9);
  EXPECT_LT(took, 3.5);
}

TEST(DicomNodes, AddReplaceRemoveAndRoundTrip) {
  model::DicomNodeList l;
  EXPECT_EQ(l.add("Hospital", "PACS@pacs.example:104", 20, "WORKSTATION"), 0u);
  EXPECT_EQ(l.add("", "ORTHANC@localhost:4242"), 1u);  // no name: the node text
  EXPECT_EQ(l.at(1).name, "ORTHANC@localhost:4242");
  EXPECT_EQ(model::displayText(l.at(0)), "Hospital (PACS@pacs.example:104)");
  EXPECT_EQ(model::displayText(l.at(1)), "ORTHANC@localhost:4242");
  EXPECT_EQ(l.add("Hospital", "PACS2@pacs.example:105"), 0u);  // same name: replaced
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(l.at(0).node.aeTitle, "PACS2");

  const auto lines = l.toLines();
  EXPECT_EQ(lines[0], "Hospital|PACS2@pacs.example:105|10|LARMOR");
  std::vector<std::string> problems;
  const auto back = model::DicomNodeList::fromLines(lines, &problems);
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back.toLines(), lines);

  l.remove(0);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_FALSE(l.find("Hospital"));
  EXPECT_THROW(l.remove(5), Error);
  EXPECT_THROW(l.add("x", "nonsense"), Error);
  EXPECT_THROW(l.add("a|b", "A@h:1"), Error);
  EXPECT_THROW(l.add("x", "A@h:1", 0), Error);
  EXPECT_THROW(l.add("x", "A@h:1", 10, ""), Error);
  EXPECT_EQ(l.size(), 1u);  // failed adds change nothing
}

TEST(DicomNodes, DamagedSettingsLinesAreSkippedWithAReason) {
  std::vector<std::string> problems;
  const auto l = model::DicomNodeList::fromLines(
      {"ok|A@h:1|10|LARMOR", "garbage", "t|A@h:1|ten|LARMOR", "p|A@h:99999|10|LARMOR"}, &problems);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l.at(0).name, "ok");
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_NE(problems[1].find("not a number"), std::string::npos) << problems[1];
  EXPECT_NE(problems[2].find("65535"), std::string::npos) << problems[2];
}
