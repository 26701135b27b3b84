// The AdmissionReview codec and one review from body to reply, as the API server would see it.
#include <gtest/gtest.h>

#include <openssl/evp.h>

#include <fstream>
#include <sstream>

#include "test/webhook/admission_test_support.h"
#include "webhook/admission_codec.h"
#include "webhook/mutator.h"
#include "webhook/review.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

json rdmaPod(const std::string& ns = "") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"generateName", "train-"}, {"namespace", ns}}},
          {"spec",
           {{"containers",
             {{{"name", "train"},
               {"image", "pytorch"},
               {"resources", {{"limits", {{"rdma/hca", "1"}}}}}}}}}}};
}

json review(const std::string& api_version, const std::string& operation, json object,
            const std::string& kind = "Pod", const std::string& ns = "training") {
  const std::string group = kind == "Pod" ? "" : "apps";
  return {{"apiVersion", api_version},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
            {"kind", {{"group", group}, {"version", "v1"}, {"kind", kind}}},
            {"resource", {{"group", group}, {"version", "v1"}, {"resource", "pods"}}},
            {"namespace", ns},
            {"operation", operation},
            {"userInfo", {{"username", "system:serviceaccount:kubeflow:training-operator"}}},
            {"object", std::move(object)},
            {"oldObject", nullptr},
            {"dryRun", false},
            {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
}

std::string unbase64(const std::string& text) {
  std::string out(text.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  EXPECT_GE(n, 0);
  out.resize(static_cast<size_t>(n));
  // EVP_DecodeBlock counts the padding bytes as zeros; drop them.
  while (!out.empty() && out.back() == '\0') {
    out.pop_back();
  }
  return out;
}

TEST(Review, V1PodCreateGetsAnApplicablePatchAndTheUidEchoed) {
  const json request = review("admission.k8s.io/v1", "CREATE", rdmaPod());
  ReviewOutcome outcome = reviewAdmission(request.dump(), defaultWebhookPolicy());
  ASSERT_EQ(outcome.http_status, 200);
  EXPECT_EQ(outcome.outcome, "mutated");
  const json reply = json::parse(outcome.body);
  EXPECT_EQ(reply["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(reply["kind"], "AdmissionReview");
  EXPECT_EQ(reply["response"]["uid"], request["request"]["uid"]);
  EXPECT_EQ(reply["response"]["allowed"], true);
  EXPECT_EQ(reply["response"]["patchType"], "JSONPatch");
  const json patch = json::parse(unbase64(reply["response"]["patch"]));
  const json patched = rdmaPod().patch(patch);
  EXPECT_EQ(patched["spec"]["containers"][0]["securityContext"]["capabilities"]["add"],
            json::array({"IPC_LOCK"}));
}

TEST(Review, V1beta1IsAnsweredInV1beta1) {
  ReviewOutcome outcome = reviewAdmission(
      review("admission.k8s.io/v1beta1", "CREATE", rdmaPod()).dump(), defaultWebhookPolicy());
  ASSERT_EQ(outcome.http_status, 200);
  EXPECT_EQ(json::parse(outcome.body)["apiVersion"], "admission.k8s.io/v1beta1");
  EXPECT_TRUE(json::parse(outcome.body)["response"].contains("patch"));
}

TEST(Review, RequestNamespaceIsUsedWhenThePodHasNone) {
  // Controllers create pods with an empty metadata.namespace (kubeflow #6027).
  ReviewOutcome outcome = reviewAdmission(
      review("admission.k8s.io/v1", "CREATE", rdmaPod(""), "Pod", "kube-system").dump(),
      defaultWebhookPolicy());
  EXPECT_EQ(outcome.outcome, "skipped");
  EXPECT_EQ(outcome.skipped, "namespace kube-system is excluded");
  EXPECT_FALSE(json::parse(outcome.body)["response"].contains("patch"));
}

TEST(Review, OnlyPodCreatesAreChanged) {
  const json update = review("admission.k8s.io/v1", "UPDATE", rdmaPod());
  const json deployment =
      review("admission.k8s.io/v1", "CREATE", {{"kind", "Deployment"}}, "Deployment");
  json remove = review("admission.k8s.io/v1", "DELETE", nullptr);
  json binding = review("admission.k8s.io/v1", "CREATE", rdmaPod());
  binding["request"]["subResource"] = "binding";
  for (const json& request : {update, deployment, remove, binding}) {
    ReviewOutcome outcome = reviewAdmission(request.dump(), defaultWebhookPolicy());
    ASSERT_EQ(outcome.http_status, 200) << request.dump();
    EXPECT_EQ(outcome.outcome, "ignored");
    const json response = json::parse(outcome.body)["response"];
    EXPECT_EQ(response["allowed"], true);
    EXPECT_EQ(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    EXPECT_FALSE(response.contains("patch"));
    EXPECT_FALSE(response.contains("patchType"));
  }
}

TEST(Review, NothingToDoMeansNoPatchType) {
  json pod = rdmaPod();
  pod["spec"]["containers"][0]["resources"] = json::object();
  ReviewOutcome outcome =
      reviewAdmission(review("admission.k8s.io/v1", "CREATE", pod).dump(), defaultWebhookPolicy());
  EXPECT_EQ(outcome.outcome, "unchanged");
  const json response = json::parse(outcome.body)["response"];
  EXPECT_FALSE(response.contains("patchType"));
  EXPECT_FALSE(response.contains("patch"));
  EXPECT_FALSE(response.contains("warnings"));
}

TEST(Review, BodiesThatAreNotAdmissionReviewsAre400WithAMessage) {
  const json no_uid = [] {
    json r = review("admission.k8s.io/v1", "CREATE", rdmaPod());
    r["request"].erase("uid");
    return r;
  }();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not JSON"},
      {"garbage{", "not JSON"},
      {"[1,2]", "not a JSON object"},
      {"\"text\"", "not a JSON object"},
      {R"({"apiVersion":"v1","kind":"Pod"})", "apiVersion must be"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"Pod"})", "kind must be AdmissionReview"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})", "no request"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[]})",
       "no request"},
      {no_uid.dump(), "request.uid is missing"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"\xff\"}", "not JSON"},
      {std::string(size_t{6} * 1024 * 1024, '['), "nests deeper than 100"},
      {"{\"a\":" + std::string(101, '[') + std::string(101, ']') + "}", "nests deeper than 100"},
      // A string ending in an escaped backslash: its last quote ends it.
      {R"({"a":"\\","b":)" + std::string(101, '[') + std::string(101, ']') + "}",
       "nests deeper than 100"},
  };
  for (const auto& [body, message] : cases) {
    ReviewOutcome outcome = reviewAdmission(body, defaultWebhookPolicy());
    EXPECT_EQ(outcome.http_status, 400) << body;
    EXPECT_EQ(outcome.outcome, "bad_request");
    EXPECT_NE(outcome.body.find(message), std::string::npos) << outcome.body;
  }
}

TEST(Review, ABodyNestingToTheLimitIsReadAndOneLevelMoreIsNot) {
  // review, request and object are three levels; the arrays in the object make up the rest.
  const auto nestedTo = [](size_t levels) {
    const size_t arrays = levels - 3;
    return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
           R"("operation":"CREATE","kind":{"group":"","kind":"Pod"},"object":{"x":)" +
           std::string(arrays, '[') + std::string(arrays, ']') + "}}}";
  };
  EXPECT_EQ(reviewAdmission(nestedTo(100), defaultWebhookPolicy()).http_status, 200);
  const ReviewOutcome deeper = reviewAdmission(nestedTo(101), defaultWebhookPolicy());
  EXPECT_EQ(deeper.http_status, 400);
  EXPECT_EQ(deeper.body, "body nests deeper than 100 levels");
}

TEST(Review, BracketsInsideStringsDoNotCountAsNesting) {
  json pod = rdmaPod();
  pod["metadata"]["annotations"] = {{"example.com/brackets", std::string(500, '[') + "\\\"{"}};
  ReviewOutcome outcome =
      reviewAdmission(review("admission.k8s.io/v1", "CREATE", pod).dump(), defaultWebhookPolicy());
  EXPECT_EQ(outcome.http_status, 200) << outcome.body;
  EXPECT_EQ(outcome.outcome, "mutated");
}

TEST(Review, WrongShapesInsideThePodNeverEscapeAsExceptions) {
  json pod = rdmaPod();
  pod["spec"]["containers"][0]["env"] = "not-a-list";
  ReviewOutcome outcome =
      reviewAdmission(review("admission.k8s.io/v1", "CREATE", pod).dump(), defaultWebhookPolicy());
  EXPECT_EQ(outcome.http_status, 200);
  EXPECT_EQ(outcome.outcome, "skipped");
  EXPECT_FALSE(json::parse(outcome.body)["response"].contains("patch"));
}

TEST(Codec, WarningsAreCutTo120CharactersOnACharacterBoundary) {
  AdmissionResponse response;
  response.uid = "u";
  // The cut at 117 bytes falls inside the two-byte e-acute: it must move back before it.
  response.warnings = {std::string(116, 'a') + "\xc3\xa9" + std::string(10, 'b'), "short"};
  const json reply = json::parse(encodeAdmissionReview(ReviewVersion::kV1, response));
  const json warnings = reply["response"]["warnings"];
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], std::string(116, 'a') + "...");
  EXPECT_EQ(warnings[1], "short");
}

TEST(Codec, PatchIsBase64OfTheOperations) {
  AdmissionResponse response;
  response.uid = "u";
  response.patch = R"([{"op":"add","path":"/a~1b","value":1}])";
  const json reply = json::parse(encodeAdmissionReview(ReviewVersion::kV1, response));
  EXPECT_EQ(unbase64(reply["response"]["patch"]), response.patch);
}

} // namespace
} // namespace kube_rdma

namespace kube_rdma {
namespace {

// AdmissionReviews as the API server sends them (userInfo, options, requestKind, an empty
// object namespace), in testdata/reviews.
json readReview(const std::string& name) {
  std::ifstream in(std::string(KUBE_RDMA_WEBHOOK_TESTDATA) + "/reviews/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

TEST(RecordedReviews, CreatesAreAnsweredInTheirVersionWithAPatchThatAppliesOnce) {
  for (const std::string name :
       {"pytorchjob-worker-create-v1.json", "pytorchjob-master-create-v1beta1.json"}) {
    SCOPED_TRACE(name);
    const json request = readReview(name);
    ReviewOutcome outcome = reviewAdmission(request.dump(), defaultWebhookPolicy());
    ASSERT_EQ(outcome.http_status, 200);
    const json reply = json::parse(outcome.body);
    EXPECT_EQ(reply["apiVersion"], request["apiVersion"]);
    EXPECT_EQ(reply["response"]["uid"], request["request"]["uid"]);
    const json pod = request["request"]["object"];
    const json patched = pod.patch(json::parse(unbase64(reply["response"]["patch"])));
    EXPECT_EQ(patched["spec"]["containers"][0]["securityContext"]["capabilities"]["add"],
              json::array({"IPC_LOCK"}));

    json again = request;
    again["request"]["object"] = patched;
    const json second = json::parse(reviewAdmission(again.dump(), defaultWebhookPolicy()).body);
    EXPECT_FALSE(second["response"].contains("patch")) << second.dump();
  }
}

TEST(RecordedReviews, LargeUnreadMembersDoNotChangeThePatch) {
  // The decoder skips what the mutator never reads; the patch must be the one computed from the
  // whole pod, and apply to it.
  json request = readReview("pytorchjob-master-create-v1beta1.json");
  json& pod = request["request"]["object"];
  json fields = json::array();
  for (int i = 0; i < 50; ++i) {
    fields.push_back({{"manager", "controller-" + std::to_string(i)},
                      {"operation", "Update"},
                      {"fieldsV1", {{"f:metadata", {{"f:labels", {{"f:app", json::object()}}}}}}}});
  }
  pod["metadata"]["managedFields"] = fields;
  pod["status"] = {{"phase", "Pending"}, {"qosClass", "Burstable"}};
  for (json& c : pod["spec"]["containers"]) {
    c["command"] = json::array({"bash", "-c", std::string(size_t{64} * 1024, 'x')});
    c["args"] = json::array({"--[not]{json}", "\"quoted\""});
  }
  const test_support::JsonMutation expected =
      test_support::mutateJsonPod(pod, request["request"]["namespace"], defaultWebhookPolicy());
  ASSERT_FALSE(expected.patch.empty());

  ReviewOutcome outcome = reviewAdmission(request.dump(), defaultWebhookPolicy());
  ASSERT_EQ(outcome.http_status, 200) << outcome.body;
  const json response = json::parse(outcome.body)["response"];
  const json patch = json::parse(unbase64(response["patch"]));
  EXPECT_EQ(patch, expected.patch);
  EXPECT_EQ(outcome.warnings, expected.warnings);
  EXPECT_NO_THROW(pod.patch(patch));
}

TEST(RecordedReviews, UpdateIsAllowedUnchanged) {
  const json request = readReview("pytorchjob-master-update-v1.json");
  ReviewOutcome outcome = reviewAdmission(request.dump(), defaultWebhookPolicy());
  EXPECT_EQ(outcome.outcome, "ignored");
  EXPECT_FALSE(json::parse(outcome.body)["response"].contains("patch"));
}

} // namespace
} // namespace kube_rdma
