use super::*;

#[test]
fn outages_begin_and_end_in_time_order_among_the_other_steps() {
    let plan = FaultPlan::parse(
        "gateway-down@30+30,kill-api@20,db-freeze@10+20,slow-uploads=5@40+1,broker-ack=7000@5+50,\
         rolling-restart@25",
        1.0,
    )
    .expect("plan");
    let order: Vec<String> = steps(&plan)
        .iter()
        .map(|(t, s)| format!("{t} {s:?}"))
        .collect();
    assert_eq!(
        order,
        [
            "5 Begin(BrokerAck(7000))",
            "10 Begin(DbFreeze)",
            "20 KillApi { down: 2s }",
            "25 RollingRestart",
            "30 End(DbFreeze)",
            "30 Begin(GatewayDown)",
            "40 Begin(SlowUploads(5))",
            "41 End(SlowUploads(5))",
            "55 End(BrokerAck(7000))",
            "60 End(GatewayDown)",
        ]
    );
    let on = serde_json::to_value(gateway(true)).expect("json");
    assert_eq!(on, serde_json::json!({"gateway_unreachable": true}));
}

#[test]
fn payment_faults_set_only_the_payment_rates_and_the_hang_time() {
    let plan =
        FaultPlan::parse("pay-error=0.05,pay-charged-error=0.02,hang-ms=8000", 1.0).expect("plan");
    let on = serde_json::to_value(payment_faults(&plan)).expect("json");
    let cut = FaultPlan::parse("pay-cut=0.03", 1.0).expect("plan");
    let cut = serde_json::to_value(payment_faults(&cut)).expect("json");
    assert_eq!(cut["payment"]["answer_fault_rate"], 0.03);
    assert_eq!(
        on,
        serde_json::json!({"payment": {"error_rate": 0.05, "hang_rate": 0.0,
            "charged_error_rate": 0.02, "answer_fault_rate": 0.0, "answer_fault": "cut"},
            "hang_ms": 8000})
    );
    let off = serde_json::to_value(payment_faults(&FaultPlan::default())).expect("json");
    assert_eq!(
        off,
        serde_json::json!({"payment": {"error_rate": 0.0, "hang_rate": 0.0,
            "charged_error_rate": 0.0, "answer_fault_rate": 0.0, "answer_fault": "cut"}})
    );
}
