// asio.hpp — the only place dlsweep includes Boost.Asio.
//
// Boost 1.74's Asio uses std::exchange without including <utility>, which breaks under
// -std=c++23 with g++ 12 ("'exchange' is not a member of 'std'"). Every Asio user
// includes this header instead of <boost/asio.hpp>.
#pragma once

#include <utility>

#include <boost/asio.hpp>
