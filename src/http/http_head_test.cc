#include "http/http_head.h"

#include <gtest/gtest.h>

#include <string>

#include "gpu_transport/headers.h"

namespace tesscpp::http {
namespace {

TEST(IsServerHeader, FramingAndConnectionHeadersStayWithTheServer) {
  for (const char* name : {"Accept", "content-type", "Content-Length", "TRANSFER-ENCODING", "connection",
                           "Host", "authorization", "User-Agent", "accept-encoding", "Expect"}) {
    EXPECT_TRUE(IsServerHeader(name)) << name;
  }
}

TEST(IsServerHeader, ExtensionHeadersReachTheRuntime) {
  // The GPU transport's headers and anything a future extension adds.
  namespace gt = gpu_transport;
  for (const char* name :
       {gt::kExportsHeader, gt::kExportsDoneHeader, gt::kBorrowerHeader, gt::kExportsLeaseHeader,
        gt::kIpcEventsHeader, gt::kInputsEventHeader, gt::kExportsEventHeader, "x-request-id",
        "content-encoding", "accepts", "hostname", ""}) {
    EXPECT_FALSE(IsServerHeader(name)) << name;
  }
}

TEST(BearerTokenMatches, OnlyTheExactTokenPasses) {
  EXPECT_TRUE(BearerTokenMatches("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(BearerTokenMatches("bearer s3cret", "s3cret"));  // the scheme is case-insensitive
  EXPECT_TRUE(BearerTokenMatches("BEARER s3cret", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("Bearer S3cret", "s3cret"));   // the token is not
  EXPECT_FALSE(BearerTokenMatches("Bearer s3cre", "s3cret"));    // a prefix
  EXPECT_FALSE(BearerTokenMatches("Bearer s3crett", "s3cret"));  // an extension
  EXPECT_FALSE(BearerTokenMatches("Bearer s3cret ", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("Bearer ", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("Basic s3cret", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("Bearers3cret", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("", "s3cret"));
  // A token with a NUL inside is compared as bytes, not as a C string.
  EXPECT_FALSE(BearerTokenMatches(std::string("Bearer ab\0", 10), std::string("ab\0d", 4)));
  EXPECT_TRUE(BearerTokenMatches(std::string("Bearer ab\0d", 11), std::string("ab\0d", 4)));
}

TEST(WriteResponseHead, StatusLineLengthHeadersAndBlankLine) {
  RuntimeResponse response;
  response.status = 405;
  response.body = Buffer::FromString(R"({"detail":"Method Not Allowed"})");
  response.headers = {{"allow", "POST"}, {"retry-after", "1"}};
  std::string head;
  WriteResponseHead(response, "Method Not Allowed", /*keep_alive=*/true, head);
  EXPECT_EQ(head,
            "HTTP/1.1 405 Method Not Allowed\r\n"
            "content-type: application/json\r\n"
            "content-length: 31\r\n"
            "allow: POST\r\n"
            "retry-after: 1\r\n"
            "\r\n");
}

TEST(WriteResponseHead, ClosingAConnectionSaysSoAndReplacesTheOldHead) {
  RuntimeResponse response;
  response.content_type = "application/octet-stream";
  std::string head = "left over from the previous response";
  WriteResponseHead(response, "OK", /*keep_alive=*/false, head);
  EXPECT_EQ(head,
            "HTTP/1.1 200 OK\r\n"
            "content-type: application/octet-stream\r\n"
            "content-length: 0\r\n"
            "connection: close\r\n"
            "\r\n");
}

}  // namespace
}  // namespace tesscpp::http
