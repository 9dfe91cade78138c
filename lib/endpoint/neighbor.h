// endpoint/neighbor.h: a port's hosts answer ARP, neighbour solicitation
// and echo (the first frame handler; endpoint/frame_handler.h).
//
// On each RX queue of a port with hosts (endpoint/host.h): an ARP request
// for a host's IPv4 address is answered with the host's MAC, a neighbour
// solicitation for its IPv6 address with an advertisement (solicited,
// override, the target link-layer address), an ICMP or ICMPv6 echo request
// to it with the reply, each as `ports[].answer` allows. Every ARP, ICMP and
// ICMPv6 frame is counted here (report.json ports[].neighbors), never as
// test traffic, unknown frames, loss or a tester limit; one shaped as these
// and malformed (truncated, a bad checksum, ND's hop limit not 255) is the
// port's rx_invalid_packets.
#pragma once

#include "endpoint/frame_handler.h"

namespace fg::endpoint {

HandlerKind NeighborKind();

}  // namespace fg::endpoint
