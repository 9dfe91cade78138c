#include "config/plan.h"
#include "config/reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fg::config {
namespace {

using ::testing::HasSubstr;

constexpr char kGood[] = R"(version: 1
name: two streams
duration: 2 s
ports:
  - name: p0
    device: net_null0
    mtu: 9000
  - name: p1
streams:
  - name: small
    port: p0
    rx_port: p1
    rate: 10 kpps
    count: 1000
    frame:
      size: 68 B   # 64 B + the 802.1Q tag
      vlan: {id: 10, pcp: 3}
      dst_ip: 198.19.0.9
  - name: big
    rate: 40%
    frame: {size: 9018}
)";

TEST(Plan, ParsesATypicalPlan) {
  auto plan = ParsePlan("good.yaml", kGood);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->name, "two streams");
  EXPECT_EQ(plan->duration_ns, 2'000'000'000);
  ASSERT_EQ(plan->ports.size(), 2u);
  EXPECT_EQ(plan->ports[0].device, "net_null0");
  EXPECT_EQ(plan->ports[0].mtu, 9000u);
  EXPECT_EQ(plan->ports[1].device, kLoopbackDevice);
  EXPECT_EQ(plan->ports[0].timestamps, PortSpec::Timestamps::kAuto);
  ASSERT_EQ(plan->streams.size(), 2u);
  const StreamSpec& s = plan->streams[0];
  EXPECT_EQ(s.port, 0u);
  EXPECT_EQ(s.rx_port, 1u);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.rate.kind, Rate::Kind::kPps);
  ASSERT_TRUE(s.frame.encap.vlan.has_value());
  EXPECT_EQ(s.frame.encap.vlan->id, 10);
  EXPECT_EQ(s.frame.encap.vlan->pcp, 3);
  EXPECT_EQ(s.frame.encap.l3.dst4.value, 0xC6130009u);
  EXPECT_EQ(plan->streams[1].port, 0u);  // defaults to the first port
  EXPECT_EQ(plan->streams[1].frame.size, 9018u);
}

TEST(Plan, APortsLinkSpeedIsAutoOrABitRate) {
  auto plan = ParsePlan("p.yaml",
                        "ports: [{name: a, link_speed: 400 Gbps}, {name: b, link_speed: auto}, {name: c}]\n"
                        "streams: [{name: s, port: a, rate: 1 kpps}]\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->ports[0].link_speed_mbps, 400'000u);
  EXPECT_EQ(plan->ports[1].link_speed_mbps, 0u);
  EXPECT_EQ(plan->ports[2].link_speed_mbps, 0u);
}

TEST(Plan, APortsPfcHonoursAndDefinesAStormOrRefusesWhereItIsWrong) {
  auto plan = ParsePlan("p.yaml",
                        "ports: [{name: a, pfc: {honor: true, storm: {window: 5 ms, events_per_s: 2000}}}, {name: b}]\n"
                        "streams: [{name: s, port: a, rate: 1 kpps}]\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->ports[0].pfc.honor);
  EXPECT_EQ(plan->ports[0].pfc.storm_window_ns, 5'000'000);
  EXPECT_EQ(plan->ports[0].pfc.storm_events_per_s, 2000);
  EXPECT_FALSE(plan->ports[1].pfc.honor);
  EXPECT_EQ(plan->ports[1].pfc.storm_window_ns, 10'000'000);
  EXPECT_EQ(plan->ports[1].pfc.storm_events_per_s, 1000);
  for (auto [pfc, says] : {std::pair{"{honour: true}", "p.yaml:1:25"}, std::pair{"{honor: 3}", "p.yaml:1:32"},
                           std::pair{"{storm: {window: 1 s, events_per_s: 1e6}}", "1e+06 events"}}) {
    auto bad = ParsePlan(
        "p.yaml", std::string("ports: [{name: a, pfc: ") + pfc + "}]\nstreams: [{name: s, port: a, rate: 1 kpps}]\n");
    ASSERT_FALSE(bad.ok()) << pfc;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(says)) << bad.status();
  }
}

TEST(Plan, APortRespondsWithDefaultsOrItsOwnSettings) {
  auto plan = ParsePlan("p.yaml",
                        "ports: [{name: a, respond: true}, {name: b, respond: false}, {name: c},\n"
                        "        {name: d, respond: {ack_every: 4, cnp_interval: 50 us, cnp_dscp: 46, cnp_pcp: 5}}]\n"
                        "streams: [{name: s, port: a, rate: 1 kpps}]\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->ports[0].respond.has_value());
  EXPECT_EQ(plan->ports[0].respond->ack_every, 16u);
  EXPECT_EQ(plan->ports[0].respond->cnp_interval_ns, 2000);  // ConnectX min_time_between_cnps
  EXPECT_EQ(plan->ports[0].respond->cnp_dscp, 48);
  EXPECT_EQ(plan->ports[0].respond->cnp_pcp, 6);
  EXPECT_FALSE(plan->ports[1].respond.has_value());
  EXPECT_FALSE(plan->ports[2].respond.has_value());
  ASSERT_TRUE(plan->ports[3].respond.has_value());
  EXPECT_EQ(plan->ports[3].respond->ack_every, 4u);
  EXPECT_EQ(plan->ports[3].respond->cnp_interval_ns, 50'000);
  EXPECT_EQ(plan->ports[3].respond->cnp_dscp, 46);
  EXPECT_EQ(plan->ports[3].respond->cnp_pcp, 5);
}

TEST(Plan, AStreamMayStartLaterAndADcqcnStreamPacesEachQp) {
  auto plan = ParsePlan("p.yaml",
                        "duration: 2 s\n"
                        "streams:\n"
                        "  - {name: a, rate: 1 kpps, flows: 4, frame: {roce: {op: WRITE, dcqcn: connectx}}}\n"
                        "  - {name: b, rate: 1 kpps, start: 500 ms,\n"
                        "     frame: {roce: {dcqcn: {preset: paper, g: 1/128, timer: 100 us, rate_ai: 10 Mbps,\n"
                        "                            rate_reduce_period: none, min_dec_factor: 25 %}}}}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->streams[0].start_ns, 0);
  EXPECT_EQ(plan->streams[1].start_ns, 500'000'000);
  const auto& a = plan->streams[0].frame.roce.dcqcn;
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->preset, "connectx");
  EXPECT_EQ(a->timer_ns, 300'000);
  EXPECT_EQ(plan->streams[0].flow_weights, (std::vector<double>{1, 1, 1, 1}));  // each QP paced on its own
  const auto& b = plan->streams[1].frame.roce.dcqcn;
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->preset, "paper");
  EXPECT_DOUBLE_EQ(b->g, 1.0 / 128);
  EXPECT_EQ(b->timer_ns, 100'000);
  EXPECT_DOUBLE_EQ(b->rate_ai_bps, 10e6);
  EXPECT_EQ(b->rate_reduce_period_ns, 0);
  EXPECT_DOUBLE_EQ(b->min_dec_factor, 0.25);
  EXPECT_EQ(b->threshold, 5u);  // the preset's
}

// `scale_to`: the paper's dynamics on a 100 Mbit/s link, k = 1/400: its
// rates / 400, its times x 400; bytes and counts as they are; a parameter
// given beside it is taken as written.
TEST(Plan, DcqcnScaleToSlowsThePresetToTheLink) {
  auto plan = ParsePlan("p.yaml",
                        "streams:\n"
                        "  - {name: a, rate: 1 kpps, frame: {roce: {dcqcn: {preset: paper, scale_to: 100 Mbps}}}}\n"
                        "  - {name: b, rate: 1 kpps, frame: {roce: {dcqcn: {scale_to: 100 Mbps, rate_ai: 1 Mbps}}}}\n"
                        "  - {name: c, rate: 1 kpps, frame: {roce: {dcqcn: {preset: connectx, scale_to: 1 Gbps}}}}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto& a = *plan->streams[0].frame.roce.dcqcn;
  EXPECT_DOUBLE_EQ(a.scale_to_bps, 100e6);
  EXPECT_EQ(a.timer_ns, 22'000'000);
  EXPECT_EQ(a.alpha_period_ns, 22'000'000);
  EXPECT_DOUBLE_EQ(a.rate_ai_bps, 100e3);
  EXPECT_DOUBLE_EQ(a.rate_hai_bps, 1e6);
  EXPECT_DOUBLE_EQ(a.min_rate_bps, 2.5e3);
  EXPECT_EQ(a.byte_counter, 10'000'000u);
  EXPECT_EQ(a.threshold, 5u);
  EXPECT_DOUBLE_EQ(a.g, 1.0 / 256);
  EXPECT_EQ(a.rate_reduce_period_ns, 0);
  const auto& b = *plan->streams[1].frame.roce.dcqcn;
  EXPECT_DOUBLE_EQ(b.rate_ai_bps, 1e6);  // as written
  EXPECT_EQ(b.timer_ns, 22'000'000);
  const auto& c = *plan->streams[2].frame.roce.dcqcn;  // connectx is for 100 Gbit/s: k = 1/100
  EXPECT_EQ(c.timer_ns, 30'000'000);
  EXPECT_EQ(c.rate_reduce_period_ns, 400'000);
  EXPECT_DOUBLE_EQ(c.rate_ai_bps, 50e3);
}

TEST(Plan, NoPortsMeansTheBuiltInLoopback) {
  auto plan = ParsePlan("p.yaml", "streams:\n  - {name: s, rate: 1 kpps}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->ports.size(), 1u);
  EXPECT_EQ(plan->ports[0].device, kLoopbackDevice);
}

// A test kind of this test's own (config knows no kinds; methods/ has the
// real ones): `probe: {level: N}`, no warm-up unless given.
struct ProbeParams : TestParams {
  int64_t level = 1;
};
class ProbeKind : public TestKindParser {
 public:
  std::string_view key() const override { return "probe"; }
  std::vector<std::string_view> own_keys() const override { return {"level"}; }
  int64_t default_warmup_ns() const override { return 0; }
  absl::StatusOr<std::shared_ptr<const TestParams>> Parse(const Plan&, const Node& n,
                                                          const TestSpec& test) const override {
    auto p = std::make_shared<ProbeParams>();
    if (auto l = n.Optional("level")) {
      auto v = l->Int(1, 9);
      if (!v.ok()) return v.status();
      p->level = *v + static_cast<int64_t>(test.streams.size()) * 10;  // sees the common keys, already read
    }
    return p;
  }
};
const ProbeKind kProbe;

TEST(Plan, ATestsCommonKeysAreReadForItsKindAndItsOwnByTheKind) {
  auto plan = ParsePlan("t.yaml", R"(
streams: [{name: a, rate: 1 kpps}, {name: b, rate: 1 kpps}]
tests:
  - probe: {level: 3, streams: [b], warmup: 2 s, tester_limit_retries: 7}
  - probe: {name: second}
)",
                        {&kProbe});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tests.size(), 2u);
  const TestSpec& t = plan->tests[0];
  EXPECT_EQ(t.kind, "probe");
  EXPECT_EQ(t.name, "probe");  // the kind's key by default
  EXPECT_EQ(t.streams, std::vector<size_t>{1});
  EXPECT_EQ(t.warmup_ns, 2'000'000'000);
  EXPECT_EQ(t.tester_limit_retries, 7);
  EXPECT_EQ(t.line, 4);
  EXPECT_EQ(t.As<ProbeParams>().level, 13);
  const TestSpec& u = plan->tests[1];
  EXPECT_EQ(u.name, "second");
  EXPECT_EQ(u.streams, (std::vector<size_t>{0, 1}));  // all by default
  EXPECT_EQ(u.warmup_ns, 0);                          // the kind's default
  EXPECT_EQ(u.tester_limit_retries, 5);
  EXPECT_EQ(u.As<ProbeParams>().level, 1);
}

TEST(Plan, WithoutKindsAPlanWithTestsIsRefused) {
  auto plan = ParsePlan("t.yaml", "streams: [{name: a, rate: 1 kpps}]\ntests:\n  - probe: {}\n");
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("t.yaml:3:5: tests[0]: this program reads plans without tests"));
}

// Each invalid plan gives exactly one error naming file:line:column and field.
struct BadCase {
  const char* name;
  const char* yaml;
  const char* expect;  // substring of the message
};

class BadPlan : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadPlan, NamesFileLineColumnAndField) {
  auto plan = ParsePlan("bad.yaml", GetParam().yaml, {&kProbe});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr(GetParam().expect));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadPlan,
    ::testing::Values(
        BadCase{"misspelt_key", "streams:\n  - name: s\n    rtae: 1 kpps\n",
                "bad.yaml:3:5: streams[0].rtae: unknown field 'rtae' (did you mean 'rate'?)"},
        BadCase{"negative_rate", "streams:\n  - name: s\n    rate: -5 kpps\n",
                "bad.yaml:3:11: streams[0].rate: rate '-5 kpps' must be greater than zero"},
        BadCase{"missing_rate", "streams:\n  - name: s\n",
                "bad.yaml:2:5: streams[0]: missing required field 'streams[0].rate'"},
        BadCase{"missing_streams", "name: x\n", "bad.yaml:1:1: : a plan needs streams (what to send) or ranks (who exchanges a collective's data); it has neither"},
        BadCase{"wrong_type", "streams:\n  - name: s\n    rate: 1 kpps\n    count: lots\n",
                "bad.yaml:4:12: streams[0].count: 'lots' is not an integer"},
        BadCase{"out_of_range_mtu", "ports:\n  - {name: p, mtu: 9001}\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:2:20: ports[0].mtu: 9001 B is out of range; expected 68 B to 9000 B"},
        BadCase{"timestamps_unknown", "ports:\n  - {name: p, timestamps: ptp}\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:2:27: ports[0].timestamps: 'ptp'"},
        BadCase{"test_unknown_stream", "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - probe: {streams: [t]}\n",
                "bad.yaml:3:23: tests[0].probe.streams[0]: unknown stream 't'; streams in this plan: s"},
        BadCase{"test_unknown_kind", "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - soak: {}\n",
                "bad.yaml:3:5: tests[0].soak: unknown field 'soak'; allowed here: probe"},
        BadCase{"test_unknown_key", "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - probe: {levle: 2}\n",
                "bad.yaml:3:13: tests[0].probe.levle: unknown field 'levle' (did you mean 'level'?); allowed here: "
                "name, streams, warmup, tester_limit_retries, level"},
        BadCase{"frame_too_small", "streams:\n  - {name: s, rate: 1 kpps, frame: {size: 60}}\n",
                "streams[0].frame.size: 60 B is too small"},
        BadCase{"tagged_frame_too_small", "streams:\n  - {name: s, rate: 1 kpps, frame: {size: 64, vlan: {id: 1}}}\n",
                "bad.yaml:2:43: streams[0].frame.size: 64 B is too small: headers and the 16 B test signature need "
                "at least 66 B"},
        BadCase{"frame_over_mtu", "streams:\n  - {name: s, rate: 1 kpps, frame: {size: 1600}}\n",
                "bad.yaml:2:43: streams[0].frame.size: the largest frame carries 1582 B of IP packet, more than port "
                "'loop0' "
                "MTU of 1500 B"},
        BadCase{"unknown_port", "streams:\n  - {name: s, port: p9, rate: 1 kpps}\n",
                "streams[0].port: unknown port 'p9'; ports in this plan: loop0"},
        BadCase{"duplicate_stream", "streams:\n  - {name: s, rate: 1 kpps}\n  - {name: s, rate: 1 kpps}\n",
                "bad.yaml:3:12: streams[1].name: stream name 's' is used twice"},
        BadCase{"bad_ip", "streams:\n  - {name: s, rate: 1 kpps, frame: {src_ip: 10.0.0}}\n",
                "streams[0].frame.src_ip: '10.0.0' is not an IPv4 address"},
        BadCase{"yaml_syntax", "streams: [\n", "bad.yaml:2:1: YAML syntax error"},
        BadCase{"not_a_list", "streams: {name: s}\n", "bad.yaml:1:10: streams: expected a list, found a map"},
        BadCase{"roce_bad_op", "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {op: WRTE}}}\n",
                "streams[0].frame.roce.op: 'WRTE' is not allowed; expected one of: WRITE, WRITE_IMM, SEND"},
        BadCase{"roce_bad_pmtu", "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {pmtu: 1500}}}\n",
                "streams[0].frame.roce.pmtu: 1500 is not a path MTU"},
        BadCase{"roce_over_mtu", "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {pmtu: 4096}}}\n",
                "streams[0].frame.roce: the largest frame carries 4163 B of IP packet, more than port 'loop0' MTU"},
        BadCase{"roce_ud_write", "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {transport: UD}}}\n",
                "streams[0].frame.roce: UD carries SEND only, not WRITE"},
        BadCase{"roce_size", "streams:\n  - {name: s, rate: 1 kpps, frame: {size: 128, roce: {}}}\n",
                "streams[0].frame.size: the size of RoCEv2 frames follows from their message and MTU"},
        BadCase{"two_kinds", "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {}, uet: {}}}\n",
                "streams[0].frame: a frame is one of roce, uet, pfc, pause or lbn, not several"},
        BadCase{"uet_uud_ack", "streams:\n  - {name: s, rate: 1 kpps, frame: {uet: {service: UUD, packet: ack}}}\n",
                "streams[0].frame.uet.packet: UUD is unreliable"},
        BadCase{"uet_nack_code", "streams:\n  - {name: s, rate: 1 kpps, frame: {uet: {packet: nack, nack_code: 3}}}\n",
                "streams[0].frame.uet.nack_code: 0x03 is not a UET NACK code"},
        BadCase{"lbn_levels", "streams:\n  - {name: s, rate: 1 kpps, frame: {lbn: {levels: '1110'}}}\n",
                "streams[0].frame.lbn.levels: expected 3 bits per leaf"},
        BadCase{"pfc_ip_key", "streams:\n  - {name: s, rate: 1 kpps, frame: {dscp: 3, pfc: {priorities: [3]}}}\n",
                "streams[0].frame.dscp: 'dscp' does not apply to PFC frames"},
        BadCase{"v6_address_for_v4", "streams:\n  - {name: s, rate: 1 kpps, frame: {src_ip: '2001:db8::1'}}\n",
                "streams[0].frame.src_ip: '2001:db8::1' is not an IPv4 address"},
        // Found by the plan fuzzer: the default 64 B is too small for IPv6 + VLAN,
        // and the error must point at the frame when `size` was not written.
        BadCase{"default_size_too_small", "streams:\n  - {name: s, rate: 1 kpps, frame: {l3: ipv6, vlan: {id: 1}}}\n",
                "bad.yaml:2:36: streams[0].frame: 64 B is too small: headers and the 16 B test signature need at "
                "least 86 B"},
        BadCase{"burst_and_rate", "streams:\n  - {name: s, rate: 1 kpps, burst: {frames: 10, gap: 1 ms}}\n",
                "streams[0].burst: a stream has either a rate or a burst schedule, not both"},
        BadCase{"burst_without_gap", "streams:\n  - {name: s, burst: {frames: 10}}\n",
                "streams[0].burst: missing required field 'streams[0].burst.gap'"},
        BadCase{"wrong_version", "version: 2\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:10: version: 2 is out of range"},
        BadCase{"link_speed_not_a_bit_rate", "ports: [{name: p, link_speed: 10 kpps}]\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:31: ports[0].link_speed: link_speed is a bit rate (e.g. 100 Gbps) or auto"},
        BadCase{"link_speed_too_high", "ports: [{name: p, link_speed: 2 Tbps}]\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:31: ports[0].link_speed: link_speed must be between 1 Mbps and 1.6 Tbps"},
        BadCase{"respond_not_bool_or_map", "ports: [{name: p, respond: 3}]\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:28: ports[0].respond: respond is true, false or a map {ack_every, cnp_interval, "
                "cnp_dscp, cnp_pcp}"},
        BadCase{"respond_unknown_key", "ports: [{name: p, respond: {ack: 2}}]\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:29: ports[0].respond.ack: unknown field 'ack'; allowed here: ack_every, cnp_interval"},
        BadCase{"respond_ack_every_zero",
                "ports: [{name: p, respond: {ack_every: 0}}]\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:40: ports[0].respond.ack_every: 0 is out of range"},
        BadCase{"respond_cnp_dscp_64",
                "ports: [{name: p, respond: {cnp_dscp: 64}}]\nstreams: [{name: s, rate: 1 kpps}]\n",
                "ports[0].respond.cnp_dscp: 64 is out of range"},
        BadCase{"dcqcn_unknown_preset",
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {dcqcn: dctcp}}}]\n",
                "streams[0].frame.roce.dcqcn: 'dctcp' is not allowed; expected one of: paper, connectx"},
        BadCase{"dcqcn_scale_to_above_the_preset_link",
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {dcqcn: {scale_to: 100 Gbps}}}}]\n",
                "streams[0].frame.roce.dcqcn.scale_to: between 1 Mbps and the preset's link, 40.000 Gbit/s"},
        BadCase{"dcqcn_scale_to_timers_beyond_1s",
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {dcqcn: {scale_to: 2 Mbps}}}}]\n",
                "streams[0].frame.roce.dcqcn.scale_to: the preset's timers would be longer than 1 s at this rate"},
        BadCase{"connect_cm_on_ud",
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {transport: UD, op: SEND, connect: cm}}}]\n",
                "streams[0].frame.roce.connect: connect: cm sets up RC QPs: an RC stream of WRITEs or SENDs"},
        BadCase{"connect_unknown",
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {connect: rdma_cm}}}]\n",
                "streams[0].frame.roce.connect: 'rdma_cm' is not allowed; expected one of: cm, none"},
        BadCase{"dcqcn_rate_max", "streams: [{name: s, rate: max, frame: {roce: {dcqcn: paper}}}]\n",
                "streams[0].frame: dcqcn cuts each QP's rate from a set one"},
        BadCase{"dcqcn_on_cnps", "streams: [{name: s, rate: 1 kpps, frame: {roce: {op: CNP, dcqcn: paper}}}]\n",
                "streams[0].frame.roce.dcqcn: dcqcn is the rate control of a QP that sends data"},
        BadCase{"retransmit_timeout_too_short",
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {retransmit: {timeout: 10 us}}}}]\n",
                "streams[0].frame.roce.retransmit.timeout: the retransmit timeout is 1 ms .. 10 s"},
        BadCase{"retransmit_unknown",
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {retransmit: selective}}}]\n",
                "streams[0].frame.roce.retransmit: 'selective' is not allowed; expected one of: go_back_n, none"},
        BadCase{"dcqcn_l1_rate",
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {dcqcn: {rate_ai: 5 Mbps L1}}}}]\n",
                "streams[0].frame.roce.dcqcn.rate_ai: a DCQCN rate is an L2 bit rate"},
        BadCase{"dcqcn_g_above_one",
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {dcqcn: {g: 2}}}}]\n",
                "streams[0].frame.roce.dcqcn.g: 2 is out of range; expected 0 to 1"},
        BadCase{"lab_not_a_map", "lab: 3\nstreams: [{name: s, rate: 1 kpps}]\n", "bad.yaml:1:6: lab:"}),
    [](const auto& info) { return std::string(info.param.name); });

// Issue 12: inputs yaml-cpp accepts and a plan must not hold, and numbers
// that parse but cannot be meant.
INSTANTIATE_TEST_SUITE_P(
    Hardening, BadPlan,
    ::testing::Values(
        BadCase{"list_as_key", "dut: {[1, 2]: x}\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:7: dut: a key must be plain text, found a list as a key"},
        BadCase{"map_as_key", "host:\n  ? {a: 1}\n  : x\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:2:5: host: a key must be plain text, found a map as a key"},
        BadCase{"list_as_key_in_a_stream", "streams:\n  - {name: s, rate: 1 kpps, [a]: 1}\n",
                "bad.yaml:2:29: streams[0]: a key must be plain text, found a list as a key"},
        BadCase{"list_as_top_level_key", "[a]: 1\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:1: plan: a key must be plain text, found a list as a key"},
        BadCase{"duplicate_key", "streams:\n  - name: s\n    rate: 1 kpps\n    count: 10\n    rate: 2 kpps\n",
                "bad.yaml:5:5: streams[0].rate: 'rate' is given twice in this map (lines 3 and 5); give it once"},
        BadCase{"duplicate_top_level_key", "duration: 1 s\nstreams: [{name: s, rate: 1 kpps}]\nduration: 2 s\n",
                "bad.yaml:3:1: duration: 'duration' is given twice in this map (lines 1 and 3)"},
        BadCase{"duplicate_key_in_free_text", "dut: {model: a, model: b}\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:17: dut.model: 'model' is given twice in this map (lines 1 and 1)"},
        BadCase{"second_document", "streams: [{name: s, rate: 1 kpps}]\n---\nname: x\n",
                "bad.yaml:2:1: plan: a second YAML document starts here; a plan is one document"},
        BadCase{"empty_second_document", "streams: [{name: s, rate: 1 kpps}]\n---\n",
                "bad.yaml:2:1: plan: a second YAML document starts here"},
        BadCase{"self_referring_anchor", "streams: &a [*a]\n", "streams[0]"},
        BadCase{"duration_rounds_to_zero", "duration: 0.1 ns\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:11: duration: duration '0.1 ns' rounds to 0 ns; durations are whole nanoseconds, at "
                "least 1 ns"},
        BadCase{"stream_duration_rounds_to_zero", "streams: [{name: s, rate: 1 kpps, duration: 0.4 ns}]\n",
                "bad.yaml:1:45: streams[0].duration: duration '0.4 ns' rounds to 0 ns"},
        BadCase{"zero_drain", "drain: 0 ms\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:8: drain: duration '0 ms' must be greater than zero"},
        BadCase{"nan_rate", "streams: [{name: s, rate: nan pps}]\n", "bad.yaml:1:27: streams[0].rate: expected a rate"},
        BadCase{"inf_duration", "duration: inf s\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:11: duration: expected a duration"},
        BadCase{"nan_size", "streams: [{name: s, rate: 1 kpps, frame: {size: nan B}}]\n",
                "streams[0].frame.size: expected a size"},
        BadCase{"rate_below_minimum", "streams: [{name: s, rate: 1e-7 pps}]\n",
                "bad.yaml:1:27: streams[0].rate: rate '1e-7 pps' is below the minimum of 0.001 pps"}),
    [](const auto& info) { return std::string(info.param.name); });

// Issue 26: what the hostile-input audit found accepted, each refused at the
// value's line and column, quoting it as written and saying why.
INSTANTIATE_TEST_SUITE_P(
    Issue26, BadPlan,
    ::testing::Values(
        // Every packet of a message carries the 16 B signature (proto::kSignatureLen).
        BadCase{"send_whose_last_packet_is_6_bytes",
                "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {op: SEND, message: 1030, pmtu: 1024}}}\n",
                "bad.yaml:2:63: streams[0].frame.roce.message: 1030 B at pmtu 1024 is 2 packets, the last (packet 2) "
                "with 6 B of payload: each packet of a message must carry at least the 16 B test signature; the "
                "smallest message from 1030 B up that works is 1040 B (or 1024 B: 1 whole packet)"},
        BadCase{"write_of_one_byte", "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {op: WRITE, message: 1}}}\n",
                "bad.yaml:2:64: streams[0].frame.roce.message: 1 B is one packet with 1 B of payload: each packet of "
                "a message must carry at least the 16 B test signature; the smallest message that works is 16 B"},
        BadCase{"read_of_one_byte",
                "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {op: READ_REQUEST, message: 1}}}\n",
                "bad.yaml:2:71: streams[0].frame.roce.message: 1 B is one packet with 1 B of payload: each READ "
                "response packet must carry at least the 16 B test signature"},
        BadCase{"uet_payload_below_the_signature",
                "streams:\n  - {name: s, rate: 1 kpps, frame: {uet: {message: 4096, max_payload: 8}}}\n",
                "bad.yaml:2:71: streams[0].frame.uet.max_payload: 8 B gives each packet of a 4096 B message at most "
                "8 B of payload: each packet must carry at least the 16 B test signature; the smallest max_payload "
                "that works is 16 B"},
        BadCase{"uet_short_last_packet",
                "streams:\n  - {name: s, rate: 1 kpps, frame: {uet: {message: 4100, max_payload: 4096}}}\n",
                "bad.yaml:2:52: streams[0].frame.uet.message: 4100 B at max_payload 4096 is 2 packets, the last "
                "(packet 2) with 4 B of payload"},
        // Go-back-N only where an RC requester of WRITEs or SENDs has a responder.
        BadCase{"retransmit_on_uc",
                "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {transport: UC, retransmit: go_back_n}}}\n",
                "bad.yaml:2:71: streams[0].frame.roce.retransmit: retransmit 'go_back_n' is go-back-N, what an RC "
                "requester of WRITEs or SENDs does on its responder's ACKs and NAKs; this stream is UC WRITE"},
        BadCase{"retransmit_on_read",
                "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {op: READ_REQUEST, retransmit: {timeout: 10 ms}}}}\n",
                "bad.yaml:2:74: streams[0].frame.roce.retransmit: retransmit {...} is go-back-N"},
        BadCase{"retransmit_on_cnp",
                "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {op: CNP, retransmit: go_back_n}}}\n",
                "bad.yaml:2:65: streams[0].frame.roce.retransmit: retransmit 'go_back_n' is go-back-N"},
        BadCase{"retransmit_without_a_responder",
                "streams:\n  - {name: s, rate: 1 kpps, frame: {roce: {retransmit: {timeout: 10 ms}}}}\n",
                "bad.yaml:2:56: streams[0].frame.roce.retransmit: retransmit (go-back-N) needs a responder: the "
                "requester goes back on the ACKs and NAKs the stream's rx_port answers with, and port 'loop0' does "
                "not respond"},
        BadCase{"respond_on_a_tx_only_port",
                "ports: [{name: p, rx_queues: 0, respond: true}]\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:42: ports[0].respond: port 'p' responds, but rx_queues '0' makes it send only"},
        // Huge numbers: refused as written, bounds printed short.
        BadCase{"per_flow_rate_of_1e300_pps", "streams:\n  - {name: s, flows: {count: 2, rates: [1e300 pps]}}\n",
                "bad.yaml:2:41: streams[0].flows.rates[0]: rate '1e300 pps' is above the maximum of 10.000 Gpps (no "
                "port sends faster)"},
        BadCase{"rate_of_100_tbps", "streams:\n  - {name: s, rate: 100 Tbps}\n",
                "bad.yaml:2:21: streams[0].rate: rate '100 Tbps' is above the maximum of 10.000 Tbit/s"},
        BadCase{"per_flow_rates_adding_up_past_the_bound", "streams:\n  - {name: s, flows: {count: 3, rates: [5 Gpps]}}\n",
                "bad.yaml:2:40: streams[0].flows.rates: the 3 flows' rates add up to 15.000 Gpps, above the largest "
                "stream rate, 10.000 Gpps"},
        BadCase{"dcqcn_min_rate_above_the_link_speed",
                "ports: [{name: p, link_speed: 10 Gbps}]\n"
                "streams: [{name: s, rate: 1 kpps, frame: {roce: {dcqcn: {min_rate: 1.6 Tbps}}}}]\n",
                "bad.yaml:2:68: streams[0].frame.roce.dcqcn.min_rate: min_rate '1.6 Tbps' is above port 'p' line rate "
                "of 10.000 Gbit/s (link_speed)"},
        // Test names are unique (the kind's key is the default name).
        BadCase{"duplicate_test_name",
                "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - probe: {name: a}\n  - probe: {name: a}\n",
                "bad.yaml:4:19: tests[1].probe.name: test name 'a' is used twice (tests[0] at line 3 has it)"},
        BadCase{"two_unnamed_tests_of_one_kind",
                "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - probe: {}\n  - probe: {level: 2}\n",
                "bad.yaml:4:12: tests[1].probe: test name 'probe' (the kind's key, a test's default name) is used "
                "twice"}),
    [](const auto& info) { return std::string(info.param.name); });

// A second kind, so an item can name two.
class OtherProbeKind : public ProbeKind {
 public:
  std::string_view key() const override { return "probe2"; }
};
const OtherProbeKind kProbe2;

TEST(Plan, ATestItemWithTwoKindsIsRefusedAtTheSecond) {
  auto plan = ParsePlan("bad.yaml", "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - {probe: {}, probe2: {}}\n",
                        {&kProbe, &kProbe2});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("bad.yaml:3:25: tests[0].probe2: a test item is one test of one kind, and this one also "
                        "has 'probe'; give each test an item of its own"));
  // Each on its own item, the two run.
  auto apart = ParsePlan("ok.yaml", "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - probe: {}\n  - probe2: {}\n",
                         {&kProbe, &kProbe2});
  EXPECT_TRUE(apart.ok()) << apart.status();
}

// Checks after parsing locate and quote values through what the parser
// kept of each stream: every value's place and text, and for a default the
// nearest place written around it.
TEST(Plan, AStreamKeepsWhereAndHowEachValueIsWritten) {
  auto plan = ParsePlan("w.yaml",
                        "ports: [{name: a}, {name: b, respond: true}]\n"
                        "streams:\n"
                        "  - {name: s, port: a, rx_port: b, rate: 10 Gbps, flows: 8,\n"
                        "     frame: {roce: {op: WRITE, message: 1 KiB, retransmit: {timeout: 20 ms}}}}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const StreamSpec& s = plan->streams[0];
  EXPECT_EQ(FormatLocation("w.yaml", s.at), "w.yaml:3:5");
  EXPECT_EQ(s.written.Text("rate"), "10 Gbps");
  EXPECT_EQ(s.written.Text("frame.roce.message"), "1 KiB");
  EXPECT_EQ(s.written.Text("frame.roce"), "");  // a map: no text
  ASSERT_NE(s.written.Find("frame.roce.retransmit.timeout"), nullptr);
  EXPECT_EQ(FormatLocation("w.yaml", s.written.Find("frame.roce.retransmit.timeout")->at), "w.yaml:4:70");
  // dest_qp is not written: the roce map's place stands for it.
  ASSERT_NE(s.written.Find("frame.roce.dest_qp"), nullptr);
  EXPECT_EQ(FormatLocation("w.yaml", s.written.Find("frame.roce.dest_qp")->at), "w.yaml:4:20");
  EXPECT_EQ(s.written.Find("burst"), nullptr);
}

// Issue 26: a plan is read only from a regular file of at most 16 MiB: a
// device (/dev/zero never ends), a directory, a FIFO or a larger file is
// refused by its path before anything is read from it.
TEST(Plan, OnlyARegularFileOfAtMost16MiBIsRead) {
  auto refused = [](const std::string& path) {
    auto plan = LoadPlan(path);
    EXPECT_FALSE(plan.ok()) << path;
    return plan.ok() ? std::string() : std::string(plan.status().message());
  };
  EXPECT_EQ(refused("/dev/zero"),
            "/dev/zero: is not a regular file (a character device); a plan is read from a regular file");
  EXPECT_THAT(refused("/dev/urandom"), HasSubstr("/dev/urandom: is not a regular file (a character device)"));
  EXPECT_THAT(refused("/"), HasSubstr("/: is a directory; a plan is a YAML file"));
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "fg-plan-files";
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "fifo").string();
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // no writer: opening it must not wait
  EXPECT_THAT(refused(fifo), HasSubstr(fifo + ": is not a regular file (a FIFO)"));
  const std::string big = (dir / "big.yaml").string();
  { std::ofstream(big) << "streams: [{name: s, rate: 1 kpps}]\n"; }
  std::filesystem::resize_file(big, kMaxPlanBytes + 1);  // sparse: no 16 MiB written
  EXPECT_EQ(refused(big), big + ": is larger than 16 MiB (16777217 B); a plan is a few KiB");
  std::filesystem::resize_file(big, 35);  // the plan again
  EXPECT_TRUE(LoadPlan(big).ok());
  std::filesystem::remove_all(dir);
}

TEST(Plan, CheckFrameIsTheParsersCheck) {
  auto plan = ParsePlan("f.yaml", "streams: [{name: s, rate: 1 kpps}]\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  FrameSpec f = plan->streams[0].frame;
  EXPECT_TRUE(CheckFrame(f, 1500, "loop0").ok());
  for (uint64_t bad : {1u, 40u, 61u}) {
    SetMessageSize(f, bad);
    EXPECT_THAT(std::string(CheckFrame(f, 1500, "loop0").message()), HasSubstr("frame.size: "));
  }
  SetMessageSize(f, 2000);
  EXPECT_THAT(std::string(CheckFrame(f, 1500, "loop0").message()),
              HasSubstr("frame.size: the largest frame carries 1982 B of IP packet, more than port 'loop0' MTU"));
  SetMessageSize(f, 1518);
  EXPECT_TRUE(CheckFrame(f, 1500, "loop0").ok());
}

TEST(Plan, RoceUetPfcLbnFramesParseWithTheirDefaults) {
  auto plan = ParsePlan("k.yaml", R"(
ports: [{name: p, mtu: 9000}]
streams:
  - name: w
    rate: 1 kpps
    frame:
      l3: ipv6
      dst_ip: 2001:db8::9
      entropy: {mode: round_robin, values: 16}
      roce: {op: WRITE, message: 1 MiB, pmtu: 4096, dest_qp: 0x12, psn: 100}
  - name: u
    rate: 1 kpps
    frame: {uet: {service: ROD, cc: true, message: 64 KiB, max_payload: 4096, profile: {dscp_trimmable: 20}}}
  - name: f
    rate: 1 kpps
    frame: {pfc: {priorities: [3, 6], quanta: 1000}}
  - name: l
    rate: 1 kpps
    frame: {lbn: {levels: "100100100011", ethertype: 0x88B6}}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const FrameSpec& w = plan->streams[0].frame;
  EXPECT_EQ(w.kind, FrameKind::kRoce);
  EXPECT_TRUE(w.encap.l3.ipv6);
  EXPECT_EQ(w.encap.l3.dst6.bytes[15], 9);
  EXPECT_EQ(w.encap.udp_dst, 4791);
  EXPECT_EQ(w.encap.l3.dscp, 26);  // methodology default
  EXPECT_EQ(w.encap.l3.ecn, 2);
  EXPECT_EQ(w.roce.message, 1u << 20);
  EXPECT_EQ(w.roce.dest_qp, 0x12u);
  EXPECT_EQ(w.roce.start_psn, 100u);
  EXPECT_EQ(w.entropy.values, 16u);
  const FrameSpec& u = plan->streams[1].frame;
  EXPECT_EQ(u.kind, FrameKind::kUet);
  EXPECT_EQ(u.encap.udp_dst, 4793);
  EXPECT_EQ(u.encap.l3.dscp, 20);  // the profile's trimmable codepoint
  EXPECT_TRUE(u.uet.cc);
  EXPECT_EQ(u.uet.service, UetSpec::Service::kRod);
  const FrameSpec& f = plan->streams[2].frame;
  EXPECT_EQ(f.pfc.class_enable, 0x48);
  EXPECT_EQ(f.pfc.quanta[6], 1000);
  const FrameSpec& l = plan->streams[3].frame;
  EXPECT_EQ(l.lbn.bitmap.ToString(4), "100100100011");
  EXPECT_EQ(l.lbn.settings.ethertype, 0x88B6);
}

TEST(Plan, MissingFileNamesTheFile) {
  auto plan = LoadPlan("/nonexistent/plan.yaml");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("/nonexistent/plan.yaml: cannot open plan"));
}

}  // namespace
}  // namespace fg::config
