"""One example per operation in the OpenAPI document: the 200 body, and the request body where there is one.

Each is checked against the document's own schema by tests/composition/test_openapi_document.py, so an example
cannot drift.
"""

from __future__ import annotations

from typing import Any

_ORDER_ID = "01JD2Q6S8T5V7W9X0Y1Z2A3B4C"
_ITEM_ID = "01JD2Q6S8T5V7W9X0Y1Z2A3B4D"
_MARKETPLACE_ID = "01JD2Q0A1B2C3D4E5F6G7H8J9K"
_JOB_ID = "01JD2QA0B1C2D3E4F5G6H7J8K9"
_REQUEST_ID = "01JD2QR0S1T2U3V4W5X6Y7Z8A9"
_SUBSCRIPTION_ID = "01JD2QS0T1U2V3W4X5Y6Z7A8B9"

_ORDER: dict[str, Any] = {
    "ServiceOrderID": _ORDER_ID,
    "MarketplaceOrderId": "206-1234567-7654321",
    "MarketplaceId": _MARKETPLACE_ID,
    "Platform": "P1",
    "Country": "UK",
    "Status": "Unshipped",
    "MarketplaceStatus": "Unshipped",
    "PurchaseDate": "2026-11-24T09:15:00.000Z",
    "LastModifiedDate": "2026-11-24T09:20:00.000Z",
    "CreatedDate": "2026-11-24T09:20:00.000Z",
    "Currency": "GBP",
    "ItemsTotal": 39.98,
    "ShippingTotal": 3.5,
    "TaxTotal": 7.25,
    "OrderTotal": 43.48,
    "RefundedTotal": 0.0,
    "ExternalReference": None,
    "Address": {"Region": "Greater London", "CountryCode": "GB"},
    "Items": [
        {
            "OrderItemId": _ITEM_ID,
            "MarketplaceItemId": "53521463789123",
            "Sku": "MUG-BLUE-350",
            "Title": "Blue mug, 350 ml",
            "Quantity": 2,
            "UnitPrice": 19.99,
            "LineTotal": 39.98,
            "Status": "Unshipped",
            "ShippedQuantity": 0,
            "CancelledQuantity": 0,
            "RefundedQuantity": 0,
            "RefundedAmount": 0.0,
            "CancelReason": None,
        }
    ],
    "Shipments": [],
    "Refunds": [],
}

_LISTING = {
    "Platform": "P1",
    "Country": "UK",
    "ListingId": "B0C1234567",
    "ExternalSku": "MUG-BLUE-350",
    "ListingUrl": "https://p1.example/uk/listing/B0C1234567",
}

_SUBSCRIPTION = {
    "SubscriptionId": _SUBSCRIPTION_ID,
    "Url": "https://erp.example.com/hooks/marketsync",
    "EventTypes": ["InventoryChanged", "OrdersDownloaded"],
    "IsActive": True,
    "ConsecutiveFailures": 0,
    "DisabledDate": None,
    "DisabledReason": None,
    "LastSuccessDate": "2026-11-24T10:00:00.000Z",
    "CreatedDate": "2026-11-20T08:00:00.000Z",
}

_WRITE = {"RequestId": _REQUEST_ID, "Warnings": [], "JobIds": [_JOB_ID]}

EXAMPLES: dict[str, Any] = {
    "GetToken": {
        "access_token": "mst_3q2c8f0b6d1e4a7c9b5d2f8e1a3c6b9d",
        "token_type": "Bearer",
        "expires_in": 3600,
        "scope": "OrdersRead OrdersWrite",
    },
    "ListOrders": {
        "Orders": [_ORDER],
        "NextCursor": "eyJ0IjoiMjAyNi0xMS0yNFQwOToyMDowMC4wMDBaIn0",
        "NextUpdatedSince": "2026-11-24T09:19:55.000Z",
    },
    "GetOrder": _ORDER,
    "ConfirmOrders": {
        **_WRITE,
        "Items": [{"OrderItemId": _ITEM_ID, "ServiceOrderID": _ORDER_ID, "Status": "Shipped"}],
    },
    "CancelOrders": {
        **_WRITE,
        "Items": [{"OrderItemId": _ITEM_ID, "ServiceOrderID": _ORDER_ID, "Status": "Cancelled"}],
    },
    "RefundOrders": {
        **_WRITE,
        "Items": [{"OrderItemId": _ITEM_ID, "ServiceOrderID": _ORDER_ID, "Status": "Shipped"}],
        "Refunds": [
            {"RefundId": "01JD2QF0G1H2J3K4M5N6P7Q8R9", "ServiceOrderID": _ORDER_ID, "Amount": 19.99, "Currency": "GBP"}
        ],
    },
    "UpdateOrder": {
        "RequestId": _REQUEST_ID,
        "Warnings": [],
        "ServiceOrderID": _ORDER_ID,
        "ExternalReference": "ERP-000123",
    },
    "PushPriceQuantity": {
        "RequestId": _REQUEST_ID,
        "Results": [{"Sku": "MUG-BLUE-350", "Result": "Updated"}, {"Sku": "MUG-RED-350", "Result": "NotFound"}],
        "Updated": 1,
        "Unchanged": 0,
        "NotFound": 1,
        "Ambiguous": 0,
        "Failed": 0,
        "JobIds": [_JOB_ID],
        "Warnings": [],
    },
    "ListProducts": {
        "Products": [
            {
                "Sku": "MUG-BLUE-350",
                "Quantity": 12,
                "LastModifiedDate": "2026-11-24T09:20:00.123456Z",
                "Listings": [_LISTING],
            }
        ],
        "TotalCount": 1,
    },
    "GetProduct": {"Product": {"Sku": "MUG-BLUE-350", "Quantity": 12, "Listings": [_LISTING]}},
    "CreateProduct": {
        "RequestId": _REQUEST_ID,
        "ProductId": "01JD2QP0Q1R2S3T4U5V6W7X8Y9",
        "Sku": "MUG-GREEN-350",
        "ListingAction": "Create",
        "ExistingListingId": None,
        "JobId": _JOB_ID,
        "Warnings": ["P1 requires at least one image: add it in the app before the listing can go live."],
    },
    "SearchProductTypes": {
        "ProductTypes": [{"CategoryId": "20625", "Title": "Mugs", "Path": "Home & Garden > Kitchen > Mugs"}],
        "TotalCount": 1,
    },
    "GetProductTypeSchema": {
        "ProductTypeViewId": "01JD2QV0W1X2Y3Z4A5B6C7D8E9",
        "CategoryId": "20625",
        "CategoryPath": "Home & Garden > Kitchen > Mugs",
        "ProductTypeCode": "DRINKING_CUP",
        "SchemaVersion": "2026-11-01",
        "Attributes": [
            {
                "Code": "colour",
                "Title": "Colour",
                "Type": "Text",
                "IsRequired": True,
                "AllowedValues": [{"Value": "blue", "Title": "Blue"}, {"Value": "green", "Title": "Green"}],
                "AllowsCustomValues": False,
            }
        ],
    },
    "ListMarketplaces": {
        "Marketplaces": [
            {
                "MarketplaceId": _MARKETPLACE_ID,
                "Platform": "P1",
                "Country": "UK",
                "HealthStatus": "Healthy",
                "HealthStatusMessage": "Connected.",
                "IsHealthy": True,
                "RequiresReauthorization": False,
                "LastPull": {"Status": "Completed", "TotalSkus": 120, "CurrentSku": 120},
            }
        ]
    },
    "GetJob": {
        "JobId": _JOB_ID,
        "Type": "PriceStockPush",
        "Status": "Completed",
        "IsComplete": True,
        "IsSuccessful": True,
        "StartedAt": "2026-11-24T09:20:01.000Z",
        "ProgressDone": 2,
        "ProgressTotal": 2,
        "RecoveryCount": 0,
    },
    "CreateWebhook": {
        "Subscription": {**_SUBSCRIPTION, "LastSuccessDate": None, "Secret": "whsec_Zm9vYmFyYmF6cXV4cXV1eGNvcmdl"},
        "RequestId": _REQUEST_ID,
        "Warnings": [],
    },
    "ListWebhooks": {"Subscriptions": [_SUBSCRIPTION]},
    "DeleteWebhook": {"SubscriptionId": _SUBSCRIPTION_ID, "Deleted": True, "RequestId": _REQUEST_ID, "Warnings": []},
    "SendTestWebhook": {
        "SubscriptionId": _SUBSCRIPTION_ID,
        "EventType": "InventoryChanged",
        "DeliveryId": "01JD2QT0U1V2W3X4Y5Z6A7B8C9",
        "RequestId": _REQUEST_ID,
        "Warnings": [],
    },
}

REQUEST_EXAMPLES: dict[str, Any] = {
    "ListOrders": {"OrderStatuses": ["Unshipped"], "UpdatedSince": "2026-11-24T00:00:00Z", "Limit": 100},
    "ConfirmOrders": {
        "OrderItems": [
            {
                "OrderItemId": _ITEM_ID,
                "ShipDate": "2026-11-24T15:00:00Z",
                "CarrierCode": "RM",
                "CarrierName": "Royal Mail",
                "ServiceLevel": "Tracked 48",
                "TrackingNumber": "RM123456789GB",
            }
        ]
    },
    "CancelOrders": {"CancelReason": "OutOfStock", "OrderItems": [{"OrderItemId": _ITEM_ID}]},
    "RefundOrders": {
        "Reason": "CustomerReturn",
        "Currency": "GBP",
        "OrderItems": [{"OrderItemId": _ITEM_ID, "Amount": 19.99, "Quantity": 1}],
    },
    "UpdateOrder": {"ServiceOrderID": _ORDER_ID, "ExternalReference": "ERP-000123"},
    "PushPriceQuantity": {
        "Items": [{"Sku": "MUG-BLUE-350", "Price": 19.99, "Quantity": 12}, {"Sku": "MUG-RED-350", "Quantity": 0}],
        "PropagateToListings": True,
    },
    "ListProducts": {"ModifiedSince": "2026-11-24T00:00:00Z", "Limit": 200},
    "CreateProduct": {
        "Sku": "MUG-GREEN-350",
        "Quantity": 5,
        "MarketplaceId": _MARKETPLACE_ID,
        "ProductTypeViewId": "01JD2QV0W1X2Y3Z4A5B6C7D8E9",
        "CategoryId": "20625",
        "Attributes": {"colour": "green"},
    },
    "SearchProductTypes": {"MarketplaceId": _MARKETPLACE_ID, "SearchText": "mug", "Limit": 20},
    "CreateWebhook": {"Url": "https://erp.example.com/hooks/marketsync", "EventTypes": ["InventoryChanged"]},
    "DeleteWebhook": {"SubscriptionId": _SUBSCRIPTION_ID},
    "SendTestWebhook": {"SubscriptionId": _SUBSCRIPTION_ID, "EventType": "InventoryChanged"},
}
