#include "common/pools/nccl_settings.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

// A node with the names that trip prefix matching: mlx5_0 (management), mlx5_1, mlx5_2, mlx5_10;
// mlx5_2 has port 1 DOWN and port 2 ACTIVE.
NodeTopology prefixTrapNode() {
  NodeTopology topo;
  for (const std::string name : {"mlx5_0", "mlx5_1", "mlx5_10", "mlx5_2"}) {
    RdmaDevice d;
    d.name = name;
    Port p;
    p.number = 1;
    p.state = PortState::kActive;
    p.link_layer = LinkLayer::kEthernet;
    d.ports.push_back(p);
    if (name == "mlx5_2") {
      d.ports[0].state = PortState::kDown;
      p.number = 2;
      d.ports.push_back(p);
    }
    topo.devices.push_back(d);
  }
  return topo;
}

TEST(RenderIbHca, WritesExactNamesWithPorts) {
  auto v = renderIbHca({{"mlx5_1", 1}, {"mlx5_2", 1}, {"mlx5_10", 2}});
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, "=mlx5_1:1,mlx5_2:1,mlx5_10:2");
}

TEST(RenderIbHca, RefusesWhatNcclWouldMisread) {
  EXPECT_NE(renderIbHca({}).error().message.find("every device"), std::string::npos);
  std::vector<HcaPort> many;
  for (uint32_t i = 0; i < 33; ++i) {
    many.push_back({"mlx5_" + std::to_string(i), 1});
  }
  EXPECT_NE(renderIbHca(many).error().message.find("reads only 32"), std::string::npos);
  many.pop_back();
  EXPECT_TRUE(renderIbHca(many).ok());
  EXPECT_FALSE(renderIbHca({{"mlx5,1", 1}}).ok());
  EXPECT_FALSE(renderIbHca({{"mlx5 1", 1}}).ok());
  EXPECT_FALSE(renderIbHca({{"", 1}}).ok());
  EXPECT_NE(renderIbHca({{"mlx5_1", 0}}).error().message.find("port 0"), std::string::npos);
}

TEST(ParseNcclIbHca, CaretThenEqualsIsAnExactExcludeList) {
  auto l = parseNcclIbHca("^=mlx5_1,mlx5_4");
  EXPECT_TRUE(l.exclude);
  EXPECT_TRUE(l.exact);
  EXPECT_EQ(l.entries, (std::vector<NcclListEntry>{{"mlx5_1", -1}, {"mlx5_4", -1}}));
  EXPECT_TRUE(l.notes.empty());
}

TEST(ParseNcclIbHca, EqualsThenCaretIsNotAnExcludeList) {
  auto l = parseNcclIbHca("=^mlx5_1");
  EXPECT_FALSE(l.exclude);
  EXPECT_TRUE(l.exact);
  ASSERT_EQ(l.entries.size(), 1u);
  EXPECT_EQ(l.entries[0].name, "^mlx5_1");
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_NE(l.notes[0].find("\"=^\" is not an exclude list"), std::string::npos);
  EXPECT_FALSE(matches(l, "mlx5_1"));
  EXPECT_FALSE(matches(l, "mlx5_2")); // it includes only a device named "^mlx5_1"
}

TEST(ParseNcclIbHca, ReadsPortsLikeAtoi) {
  auto l =
      parseNcclIbHca("mlx5_0:1,mlx5_1:2:7,mlx5_2:,mlx5_3:x,mlx5_4:-1,mlx5_5:99999999999999999999");
  ASSERT_EQ(l.entries.size(), 6u);
  EXPECT_EQ(l.entries[0].port, 1);
  EXPECT_EQ(l.entries[1].port, 2); // ":rail" is not read before 2.30.7
  EXPECT_EQ(l.entries[2].port, 0); // empty port: atoi("") == 0, matches no port
  EXPECT_EQ(l.entries[3].port, 0);
  EXPECT_EQ(l.entries[4].port, -1);
  EXPECT_EQ(l.entries[5].port, -1); // strtol saturates to LONG_MAX, narrowed to int: -1
  EXPECT_FALSE(matches(l, "mlx5_2", 1));
  EXPECT_TRUE(matches(l, "mlx5_4", 2));
  int port_notes = 0;
  for (const auto& n : l.notes) {
    port_notes += n.find("reads the port as") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(port_notes, 5); // all but the plain "mlx5_0:1"
}

TEST(ParseNcclIbHca, SkipsEmptyEntriesAndKeepsWhitespace) {
  auto l = parseNcclIbHca(",mlx5_1,, mlx5_2,:1");
  EXPECT_EQ(l.entries, (std::vector<NcclListEntry>{{"mlx5_1", -1}, {" mlx5_2", -1}}));
  EXPECT_FALSE(matches(l, "mlx5_2")); // " mlx5_2" is not trimmed
  bool whitespace_note = false;
  for (const auto& n : l.notes) {
    whitespace_note = whitespace_note || n.find("whitespace") != std::string::npos;
  }
  EXPECT_TRUE(whitespace_note);
}

TEST(ParseNcclIbHca, KeepsOnly32EntriesAndReportsTheRest) {
  std::string value;
  for (int i = 0; i < 35; ++i) {
    value += (i ? "," : "=") + std::string("mlx5_") + std::to_string(i);
  }
  auto l = parseNcclIbHca(value);
  EXPECT_EQ(l.entries.size(), 32u);
  EXPECT_EQ(l.dropped, (std::vector<std::string>{"mlx5_32", "mlx5_33", "mlx5_34"}));
  EXPECT_TRUE(matches(l, "mlx5_31"));
  EXPECT_FALSE(matches(l, "mlx5_32"));
}

TEST(Matches, PrefixModeComparesTheEntrysLength) {
  auto l = parseNcclIbHca("mlx5_1");
  EXPECT_TRUE(matches(l, "mlx5_1"));
  EXPECT_TRUE(matches(l, "mlx5_10"));
  EXPECT_TRUE(matches(l, "mlx5_19"));
  EXPECT_FALSE(matches(l, "mlx5_2"));
  EXPECT_FALSE(matches(l, "mlx5_"));
  EXPECT_TRUE(matches(parseNcclIbHca("mlx5"), "mlx5_7"));
}

TEST(Matches, ExactModeComparesTheWholeName) {
  auto l = parseNcclIbHca("=mlx5_1");
  EXPECT_TRUE(matches(l, "mlx5_1"));
  EXPECT_FALSE(matches(l, "mlx5_10"));
  EXPECT_FALSE(matches(l, "mlx5_"));
}

TEST(Matches, PortMinusOneOnEitherSideMatchesAnyPort) {
  auto l = parseNcclIbHca("=mlx5_1:2");
  EXPECT_TRUE(matches(l, "mlx5_1", 2));
  EXPECT_FALSE(matches(l, "mlx5_1", 1));
  EXPECT_TRUE(matches(l, "mlx5_1", -1));
  auto exclude = parseNcclIbHca("^mlx5_1:2");
  EXPECT_TRUE(matches(exclude, "mlx5_1", 1));
  EXPECT_FALSE(matches(exclude, "mlx5_1", 2));
  EXPECT_FALSE(matches(exclude, "mlx5_10", 2)); // prefix: excludes port 2 of mlx5_1x too
}

TEST(Matches, EmptyListsMatchEverythingSoACaretAloneExcludesEverything) {
  EXPECT_TRUE(matches(parseNcclIbHca(""), "mlx5_0"));
  EXPECT_TRUE(matches(parseNcclIbHca("="), "mlx5_0"));
  EXPECT_FALSE(matches(parseNcclIbHca("^"), "mlx5_0"));
}

TEST(ParseNcclSocketIfname, ValuesOfOneCharacterAreIgnored) {
  for (const char* v : {"", "e", "^"}) {
    auto l = parseNcclSocketIfname(v);
    EXPECT_TRUE(l.ignored) << v;
    EXPECT_TRUE(matches(l, "docker0")) << v;
  }
  EXPECT_FALSE(parseNcclSocketIfname("=e").ignored);
}

TEST(ParseNcclSocketIfname, UsesTheSameRulesWithSixteenEntriesAndNoPorts) {
  auto l = parseNcclSocketIfname("^docker,lo:3");
  EXPECT_TRUE(l.exclude);
  EXPECT_EQ(selectInterfaces(l, {"eth0", "docker0", "lo", "ib0"}),
            (std::vector<std::string>{"eth0", "ib0"}));
  std::string many = "=";
  for (int i = 0; i < 20; ++i) {
    many += (i ? "," : "") + std::string("eth") + std::to_string(i);
  }
  auto m = parseNcclSocketIfname(many);
  EXPECT_EQ(m.entries.size(), 16u);
  EXPECT_EQ(m.dropped.size(), 4u);
  EXPECT_EQ(selectInterfaces(parseNcclSocketIfname("=eth0"), {"eth0", "eth01"}),
            (std::vector<std::string>{"eth0"}));
}

TEST(SelectHcaPorts, PrefixSelectsTheTensAndIsReportedAsOverMatching) {
  auto s = selectHcaPorts(prefixTrapNode(), parseNcclIbHca("mlx5_1"));
  EXPECT_EQ(s.selected, (std::vector<HcaPort>{{"mlx5_1", 1}, {"mlx5_10", 1}}));
  ASSERT_EQ(s.over_matches.size(), 1u);
  EXPECT_EQ(s.over_matches[0].first, "mlx5_1");
  EXPECT_EQ(s.over_matches[0].second, (std::vector<std::string>{"mlx5_1", "mlx5_10"}));
  EXPECT_TRUE(s.unmatched.empty());
}

TEST(SelectHcaPorts, OnlyActivePortsAreSelected) {
  auto s = selectHcaPorts(prefixTrapNode(), parseNcclIbHca("=mlx5_2,mlx5_9"));
  EXPECT_EQ(s.selected, (std::vector<HcaPort>{{"mlx5_2", 2}}));
  EXPECT_EQ(s.unmatched, (std::vector<std::string>{"mlx5_9"}));
  EXPECT_TRUE(s.over_matches.empty());
}

TEST(SelectHcaPorts, ReportsPortsThatDoNotExist) {
  auto s = selectHcaPorts(prefixTrapNode(), parseNcclIbHca("=mlx5_1:2"));
  EXPECT_TRUE(s.selected.empty());
  EXPECT_EQ(s.unmatched, (std::vector<std::string>{"mlx5_1:2"}));
}

TEST(SelectHcaPorts, ExcludeListKeepsTheOthers) {
  auto s = selectHcaPorts(prefixTrapNode(), parseNcclIbHca("^=mlx5_0"));
  EXPECT_EQ(s.selected, (std::vector<HcaPort>{{"mlx5_1", 1}, {"mlx5_10", 1}, {"mlx5_2", 2}}));
}

TEST(SelectHcaPorts, RenderedValueSelectsExactlyWhatWasRendered) {
  const std::vector<HcaPort> wanted{{"mlx5_1", 1}, {"mlx5_2", 2}};
  auto s = selectHcaPorts(prefixTrapNode(), parseNcclIbHca(*renderIbHca(wanted)));
  EXPECT_EQ(s.selected, wanted);
}

TEST(NcclConf, RendersStrictLines) {
  auto text = renderNcclConf({{"NCCL_IB_HCA", "=mlx5_1:1,mlx5_2:1"}, {"NCCL_IB_DISABLE", "0"}});
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\nNCCL_IB_DISABLE=0\n");
  EXPECT_EQ(*renderNcclConf({}), "");
}

TEST(NcclConf, RefusesWhatNcclWouldReadDifferently) {
  struct Bad {
    NcclEnv env;
    std::string part;
  };
  const std::vector<Bad> cases = {
      {{{"NCCL A", "1"}}, "name \"NCCL A\""},
      {{{"A=B", "1"}}, "name \"A=B\""},
      {{{"#NCCL", "1"}}, "name \"#NCCL\""},
      {{{"", "1"}}, "name \"\""},
      {{{"1A", "1"}}, "name \"1A\""},
      {{{"NCCL_X", "a\nNCCL_Y=b"}}, "newline"},
      {{{"NCCL_X", "a\r"}}, "carriage return"},
      {{{"NCCL_X", std::string("a\0b", 3)}}, "NUL"},
      {{{"NCCL_X", std::string(1024, 'v')}}, "1023"},
      {{{std::string(1024, 'N'), "1"}}, "1023"},
      {{{"NCCL_X", "1"}, {"NCCL_X", "2"}}, "given twice"},
  };
  for (const auto& c : cases) {
    auto r = renderNcclConf(c.env);
    ASSERT_FALSE(r.ok()) << c.part;
    EXPECT_NE(r.error().message.find(c.part), std::string::npos) << r.error().message;
  }
  EXPECT_TRUE(renderNcclConf({{"NCCL_X", std::string(1023, 'v')}}).ok());
}

TEST(NcclConf, ParsesLikeNccl) {
  const std::string text = "NCCL_SOCKET_IFNAME==ens1f0\n"
                           "NAME = v\n"
                           "# NCCL_DEBUG=INFO\n"
                           "no equals sign\n"
                           "=orphan\n"
                           "NCCL_CRLF=1\r\n"
                           "NCCL_A=x=y\n"
                           "\n"
                           "NCCL_LAST=no newline";
  EXPECT_EQ(parseNcclConf(text), (NcclEnv{{"NCCL_SOCKET_IFNAME", "=ens1f0"},
                                          {"NAME ", " v"},
                                          {"NCCL_CRLF", "1\r"},
                                          {"NCCL_A", "x=y"},
                                          {"NCCL_LAST", "no newline"}}));
}

TEST(NcclConf, TruncatesLikeNcclAndStopsAtNul) {
  const std::string long_value(1500, 'v');
  auto parsed = parseNcclConf("NCCL_X=" + long_value + "\n" + std::string("NCCL_Y=a\0b\n", 11));
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0].second.size(), 1023u);
  EXPECT_EQ(parsed[1].second, "a");
}

TEST(NcclConf, RoundTripsWhatWeRender) {
  const NcclEnv env{{"NCCL_IB_HCA", "=mlx5_1:1"},
                    {"NCCL_IB_GID_INDEX", "3"},
                    {"KUBE_RDMA_DEVICES", "mlx5_1"},
                    {"NCCL_EMPTY", ""}};
  EXPECT_EQ(parseNcclConf(*renderNcclConf(env)), env);
}

} // namespace
} // namespace kube_rdma
